"""The JSON API under ``/api``: tasks in from a dispatcher, their outcomes and the queue out.

``POST /api/tasks`` queues a task spec (idempotent on its ``id``), ``GET /api/tasks`` and
``/api/tasks/{id}`` read tasks with their result, certificate, report and notifications,
``GET /api/escalations`` and ``POST /api/escalations/{id}/resolve|approve`` work the human
queue (a reviewer's bearer only: `donegate.review`), and
``/api/openapi.json`` describes it all. Every error is one line of JSON, ``{"error", "field"}``.

Auth is the UI's (the guard in `donegate.server.app` runs first): a bearer token when tokens
are configured, a loopback ``Host`` otherwise. Writes are kept from cross-site pages without the
form CSRF token, because a page on another origin can do neither of the two things a write here
needs: with tokens, the ``Authorization: Bearer`` header itself (a session cookie alone is
refused for API writes, since a browser sends cookies on its own); without tokens, an
``application/json`` body (a cross-origin JSON POST needs a CORS preflight this server never
grants, and a rebinding DNS name fails the Host check). An ``Origin`` naming another host is
refused in both cases.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from donegate import review
from donegate.errors import UserError
from donegate.harness.spec import TaskSpecError
from donegate.records.certificate import read_certificate
from donegate.server._web import Web
from donegate.server.escalations import refused
from donegate.server.openapi import OPENAPI, QUEUE_STATUSES, STATUSES
from donegate.store import TaskRecord
from donegate.worker import submit

if TYPE_CHECKING:
    from donegate.store._outbox import OutboxStore

__all__ = ["MAX_BODY", "OPENAPI", "routes"]

MAX_BODY = 4 * 1024 * 1024
"""Bytes of a request body read at most."""


class ApiError(Exception):
    """An answer of `status` with ``{"error": message, "field": field}``."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


def error_response(status: int, message: str, field: str | None = None) -> JSONResponse:
    """The one error shape of the API (one line: the message's whitespace collapsed)."""
    return JSONResponse({"error": " ".join(message.split()), "field": field}, status_code=status)


Handler = Callable[[Request], Awaitable[Response]]


def _answers(handler: Handler) -> Handler:
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except ApiError as exc:
            return error_response(exc.status, str(exc), exc.field)

    return wrapped


def routes(web: Web) -> list[BaseRoute]:
    """The API's routes, to mount under ``/api``."""

    @_answers
    async def create_task(request: Request) -> Response:
        data = await _json_body(web, request)
        if not isinstance(data, dict):
            raise ApiError(422, "a task spec is a JSON object", None)
        workdir = data.get("workdir")
        if not isinstance(workdir, str) or not Path(workdir).is_absolute():
            raise ApiError(422, "an API task names its workdir as an absolute path", "workdir")
        max_attempts = _int(request, "max_attempts", 5, low=1, high=100)
        record, created = await run_in_threadpool(_submit, web, data, max_attempts)
        view = await run_in_threadpool(_task_view, web, record)
        return JSONResponse({**view, "created": created}, status_code=201 if created else 200)

    @_answers
    async def list_tasks(request: Request) -> Response:
        status = request.query_params.get("status")
        if status is not None and status not in STATUSES:
            raise ApiError(400, f"status {status[:40]!r}: expected one of {', '.join(STATUSES)}",
                           "status")  # fmt: skip
        limit = _int(request, "limit", 100, low=1, high=1000)
        rows = await run_in_threadpool(web.store.list_tasks, status=status, limit=limit)
        return JSONResponse({"tasks": [_task_brief(r) for r in rows]})

    @_answers
    async def get_task(request: Request) -> Response:
        task_id = str(request.path_params["task_id"])
        record = await run_in_threadpool(web.store.get, task_id)
        if record is None:
            raise ApiError(404, f"no task {task_id[:200]!r}", "id")
        return JSONResponse(await run_in_threadpool(_task_view, web, record))

    @_answers
    async def list_escalations(request: Request) -> Response:
        status = request.query_params.get("status", "open")
        if status not in QUEUE_STATUSES:
            raise ApiError(400, f"status {status[:40]!r}: expected one of "
                           f"{', '.join(QUEUE_STATUSES)}", "status")  # fmt: skip
        after = _int(request, "after", 0, low=0, high=2**62) or None
        limit = _int(request, "limit", 50, low=1, high=500)
        rows = await run_in_threadpool(
            web.store.queue_page, status=None if status == "all" else status, after=after,
            limit=limit,
        )  # fmt: skip
        return JSONResponse({"escalations": [asdict(r) for r in rows]})

    @_answers
    async def resolve(request: Request) -> Response:
        data = await _json_body(web, request, empty_ok=True)
        if not isinstance(data, dict):
            raise ApiError(422, "the body is a JSON object: note, requeue, instructions", None)
        note = _text(data, "note")
        instructions = _text(data, "instructions")
        requeue = data.get("requeue", False)
        if not isinstance(requeue, bool):
            raise ApiError(422, "requeue is true or false", "requeue")
        extra = _budget_extra(data.get("budget_extra"))
        if extra and not requeue:
            raise ApiError(422, "budget_extra only goes with requeue: true", "budget_extra")
        escalation_id = int(request.path_params["escalation_id"])
        entry = await run_in_threadpool(
            _resolve, web, request, escalation_id=escalation_id, note=note, requeue=requeue,
            instructions=instructions, budget_extra=extra,
        )  # fmt: skip
        return JSONResponse(entry)

    @_answers
    async def approve(request: Request) -> Response:
        data = await _json_body(web, request, empty_ok=True)
        if not isinstance(data, dict):
            raise ApiError(422, "the body is a JSON object: note", None)
        escalation_id = int(request.path_params["escalation_id"])
        entry = await run_in_threadpool(
            _approve, web, request, escalation_id=escalation_id, note=_text(data, "note")
        )
        return JSONResponse(entry)

    async def openapi(request: Request) -> Response:
        return JSONResponse(OPENAPI)

    return [
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/tasks", create_task, methods=["POST"]),
        Route("/tasks", list_tasks, methods=["GET"]),
        Route("/tasks/{task_id:str}", get_task, methods=["GET"]),
        Route("/escalations", list_escalations, methods=["GET"]),
        Route("/escalations/{escalation_id:int}/resolve", resolve, methods=["POST"]),
        Route("/escalations/{escalation_id:int}/approve", approve, methods=["POST"]),
    ]


# -- the pieces ----------------------------------------------------------------------------


async def _json_body(web: Web, request: Request, *, empty_ok: bool = False) -> Any:
    """The JSON body of a write, once the write is shown not to come from another site."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    origin = request.headers.get("origin")
    if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host"):
        raise ApiError(403, "the request came from another site", "origin")
    if web.auth.required and not request.headers.get("authorization", "").lower().startswith(
        "bearer "
    ):
        raise ApiError(
            403, "API writes carry the token as 'Authorization: Bearer'", "authorization"
        )
    if ctype != "application/json":
        raise ApiError(415, "the body must be application/json", "content-type")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise ApiError(413, f"the body is larger than {MAX_BODY} bytes", None)
    if not raw.strip() and empty_ok:
        return {}
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, f"the body is not JSON: {exc}", None) from None


def _int(request: Request, name: str, default: int, *, low: int, high: int) -> int:
    text = request.query_params.get(name)
    if text is None:
        return default
    if not text.isdigit() or not low <= int(text) <= high:
        raise ApiError(400, f"{name} is a whole number from {low} to {high}", name)
    return int(text)


def _text(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise ApiError(422, f"{name} is a string", name)
    return value or None


def _submit(web: Web, data: dict[str, Any], max_attempts: int) -> tuple[TaskRecord, bool]:
    try:
        return submit(data, web.store, max_attempts=max_attempts, source="body")
    except TaskSpecError as exc:
        message = str(exc).removeprefix("body: ")
        raise ApiError(422, message, exc.field) from None
    except UserError as exc:
        status = 409 if "already submitted" in str(exc) else 422
        raise ApiError(status, str(exc), "id") from None


def _resolve(
    web: Web,
    request: Request,
    *,
    escalation_id: int,
    note: str | None,
    requeue: bool,
    instructions: str | None,
    budget_extra: dict[str, float] | None = None,
) -> dict[str, Any]:
    actor = _actor(web, request)
    if instructions and not requeue:
        raise ApiError(422, "instructions only go with requeue: true", "instructions")
    with _refused():
        if requeue:
            entry = review.requeue(
                web.store, escalation_id, actor=actor, instructions=instructions, note=note,
                budget_extra=budget_extra,
            )  # fmt: skip
        else:
            entry = review.resolve(web.store, escalation_id, actor=actor, note=note)
    return {**asdict(entry), "report": entry.report.as_data()}


def _budget_extra(value: Any) -> dict[str, float] | None:
    """The body's ``budget_extra`` (``{"usd": 0.5}``, ``{"tokens": 10000}`` or both): more
    budget for a requeued task, as ``escalations resolve --requeue --budget-extra``."""
    if value is None:
        return None
    if (
        not isinstance(value, dict)
        or not value
        or any(k not in ("usd", "tokens") for k in value)
        or any(isinstance(v, bool) or not isinstance(v, int | float) or v <= 0
               for v in value.values())
    ):  # fmt: skip
        raise ApiError(
            422, "budget_extra is an object of usd and/or tokens, each a positive number",
            "budget_extra",
        )  # fmt: skip
    return {kind: float(amount) for kind, amount in value.items()}


def _approve(web: Web, request: Request, *, escalation_id: int, note: str | None) -> dict[str, Any]:
    actor = _actor(web, request)
    with _refused():
        approved = review.approve(web.store, escalation_id, actor=actor, note=note)
    entry, certificate = approved.escalation, str(approved.certificate)
    return {**asdict(entry), "report": entry.report.as_data(), "certificate": certificate}


def _actor(web: Web, request: Request) -> review.Actor:
    with _refused():
        return web.actor(request, "api")


@contextmanager
def _refused() -> Iterator[None]:
    """`refused`'s HTTP errors in the API's one error shape."""
    try:
        with refused():
            yield
    except HTTPException as exc:
        field = "authorization" if exc.status_code == 403 else "id"
        raise ApiError(exc.status_code, str(exc.detail), field) from None


def _task_brief(record: TaskRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "type": record.type,
        "status": record.status,
        "attempts": record.attempts,
        "max_attempts": record.max_attempts,
        "generation": record.generation,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "finished_at": record.finished_at,
        "reason": record.reason,
    }


def _task_view(web: Web, record: TaskRecord) -> dict[str, Any]:
    """A task with its result, certificate, latest report and notifications."""
    result = dict(record.result) if record.result is not None else None
    certificate = None
    path = result.get("certificate") if result else None
    if isinstance(path, str):
        try:
            certificate = read_certificate(path)  # as written: what its signature covers
        except UserError:
            certificate = None
    report = None
    ids = web.store.task_escalations(record.id)
    if ids:
        entry = web.store.escalation(ids[-1])
        report = entry.report.as_data() if entry is not None else None
    notifications: list[dict[str, Any]] = []
    if hasattr(web.store, "outbox"):
        outbox = cast("OutboxStore", web.store)
        notifications = [n.public() for n in outbox.outbox(task_id=record.id)]
    return {
        **_task_brief(record),
        "spec": dict(record.spec),
        "result": result,
        "certificate": certificate,
        "report": report,
        "notifications": notifications,
    }
