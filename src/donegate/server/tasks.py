"""Tasks: the filtered, paged list; one task's runs, journal, evidence, checklist and certificate;
Requeue for a failed or cancelled task (the store's `retry`, as ``donegate tasks retry
--instructions``); and ``/live``, which the pages poll for the tasks still moving.
"""

from __future__ import annotations

import base64
from urllib.parse import quote, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from donegate.errors import UserError
from donegate.messages import Turn
from donegate.results import Spend
from donegate.server._views import certificate_view, checks_of, spec_prompt, steps_of
from donegate.server._web import Web
from donegate.server.escalations import form_text
from donegate.store import TaskRecord

__all__ = ["STATUSES", "decode_cursor", "encode_cursor", "routes"]

STATUSES = ("pending", "running", "done", "awaiting_review", "escalated", "failed", "cancelled")
"""Every task status, in the order the filter lists them."""
PAGE = 50
"""Tasks per page."""
MAX_LIVE = 100
"""Tasks one ``/live`` poll may ask about."""
MAX_FILTER = 200
"""The longest text filter."""


def encode_cursor(cursor: tuple[float, str]) -> str:
    """A page cursor for a URL: the last task's creation time and id."""
    raw = f"{cursor[0]!r}|{cursor[1]}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str) -> tuple[float, str] | None:
    """The inverse of `encode_cursor`; None for anything that is not one."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
        at, _, task_id = raw.partition("|")
        return float(at), task_id
    except (ValueError, UnicodeDecodeError):
        return None


def _filters(request: Request) -> dict[str, str]:
    params = request.query_params
    status = params.get("status", "")
    if status and status not in STATUSES:
        raise HTTPException(400, f"status {status[:40]!r}: expected one of {', '.join(STATUSES)}")
    text = params.get("text", "").strip()
    if len(text) > MAX_FILTER:
        raise HTTPException(400, f"text: at most {MAX_FILTER} characters")
    return {"status": status, "type": params.get("type", "")[:100], "text": text}


def routes(web: Web) -> list[BaseRoute]:
    """``/tasks``, ``/tasks/{id}``, its requeue action, and ``/live``."""

    def task_list(request: Request) -> Response:
        filters = _filters(request)
        after_text = request.query_params.get("after", "")
        after = decode_cursor(after_text) if after_text else None
        page = web.store.task_page(
            status=filters["status"] or None,
            type=filters["type"] or None,
            text=filters["text"] or None,
            after=after,
            limit=PAGE,
        )
        query = {k: v for k, v in filters.items() if v}
        return web.render(
            request,
            "tasks.html",
            tasks=page.tasks,
            filters=filters,
            statuses=STATUSES,
            types=web.store.task_types(),
            counts=web.store.counts(),
            next_url=_page_url(query, page.next) if page.next is not None else None,
            first_url=_page_url(query, None) if after is not None else None,
        )

    def task_page(request: Request) -> Response:
        task_id = request.path_params["task_id"]
        task = web.store.get(task_id)
        if task is None:
            raise HTTPException(404, f"no task {task_id!r}")
        journals = web.store.journals(task_id)
        by_generation: dict[int, dict[int, Turn]] = {}
        for j in journals:
            by_generation.setdefault(j.generation, {}).update(j.turns)
        runs = [(j, steps_of(j, by_generation.get(j.generation, {}))) for j in journals]
        result = task.result or {}
        cert_path = result.get("certificate")
        certificate = certificate_view(cert_path) if isinstance(cert_path, str) else None
        escalation_ids = web.store.task_escalations(task_id)
        open_entry = None
        if escalation_ids and task.status in ("escalated", "awaiting_review"):
            last = web.store.escalation(escalation_ids[-1])
            open_entry = last if last is not None and last.status == "open" else None
        return web.render(
            request,
            "task.html",
            task=task,
            prompt=spec_prompt(task.spec),
            runs=list(reversed(runs)),
            evidence=web.store.evidence(task_id),
            checklist=web.store.checklist(task_id),
            effects=web.store.effects(task_id),
            certificate=certificate,
            certificate_checks=checks_of(certificate.body)
            if certificate is not None and certificate.body is not None
            else [],
            escalation_ids=escalation_ids,
            spend=Spend.from_data(result.get("spend")),
            budget=task.spec.get("budget") or {},
            open_entry=open_entry,
            history=web.store.actions(task_id=task_id),
            notifications=_notifications(web, task_id),
            live=task.status in ("pending", "running"),
            can_requeue=task.status in ("failed", "cancelled")
            or (task.status == "escalated" and open_entry is None),
        )

    async def requeue(request: Request) -> Response:
        form = await web.auth.form(request)
        task_id = request.path_params["task_id"]
        instructions = form_text(form, "instructions", "Instructions")
        await run_in_threadpool(_retry, web, request, task_id, instructions)
        return RedirectResponse(f"/tasks/{quote(task_id, safe='')}", status_code=303)

    def live(request: Request) -> Response:
        ids = request.query_params.getlist("task")[:MAX_LIVE]
        states: dict[str, dict[str, object]] = {}
        for task_id in ids:
            task = web.store.get(task_id)
            if task is not None:
                states[task_id] = _state(task)
        running = web.store.task_page(status="running", limit=PAGE).tasks
        return JSONResponse(
            {
                "tasks": states,
                "running": [_state(t) for t in running],
                "open": web.store.queue_count(status="open"),
            }
        )

    return [
        Route("/tasks", task_list),
        Route("/tasks/{task_id:path}/requeue", requeue, methods=["POST"]),
        Route("/tasks/{task_id:path}", task_page),
        Route("/live", live),
    ]


def _notifications(web: Web, task_id: str) -> list[dict[str, object]]:
    """The task's outbox rows (delivery state), when the store has an outbox."""
    outbox = getattr(web.store, "outbox", None)
    return [n.public() for n in outbox(task_id=task_id)] if callable(outbox) else []


def _state(task: TaskRecord) -> dict[str, object]:
    return {
        "id": task.id,
        "status": task.status,
        "attempts": task.attempts,
        "generation": task.generation,
        "updated_at": task.updated_at,
        "heartbeat_at": task.heartbeat_at,
    }


def _page_url(query: dict[str, str], cursor: tuple[float, str] | None) -> str:
    params = dict(query)
    if cursor is not None:
        params["after"] = encode_cursor(cursor)
    return "/tasks" + (f"?{urlencode(params)}" if params else "")


def _retry(web: Web, request: Request, task_id: str, instructions: str | None) -> None:
    try:
        record = web.store.retry(task_id, instructions=instructions)
    except UserError as exc:
        status = 404 if str(exc).startswith("no task") else 409
        raise HTTPException(status, str(exc)) from None
    web.store.record_action(
        actor=web.who(request), action="retry", task_id=record.id, detail=instructions
    )
