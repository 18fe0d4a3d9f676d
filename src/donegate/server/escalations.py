"""The human queue: the list (oldest first), one entry's report, and Resolve / Requeue.

The actions are the store's own `resolve` (what ``donegate escalations resolve [--requeue
--instructions]`` calls), followed by `record_action` with who and when. A review (a
``closure: human`` task whose claim passed every gate) can also be approved, as ``donegate
escalations approve`` does; resolving a review rejects it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from donegate.errors import UserError
from donegate.harness.certificate import approve_certificate
from donegate.harness.escalation import EscalationReport
from donegate.server._web import Web

__all__ = ["MAX_TEXT", "form_text", "report_view", "routes"]

PAGE = 50
"""Queue entries per page."""
MAX_TEXT = 10_000
"""The longest note or instructions accepted."""


def form_text(form: FormData, name: str, label: str) -> str | None:
    """A posted text field, stripped; None when empty; 400 when too long."""
    value = form.get(name)
    if not isinstance(value, str) or not value.strip():
        return None
    if len(value) > MAX_TEXT:
        raise HTTPException(400, f"{label}: at most {MAX_TEXT} characters, got {len(value)}")
    return value.strip()


def report_view(report: EscalationReport) -> dict[str, Any]:
    """An escalation report's parts as the page shows them; missing parts are empty.

    Reports are the harness's (`donegate.harness.escalation.build_report`) or the short one a
    task whose workers kept dying gets; the store reads both leniently
    (`EscalationReport.from_data`). Counts the report does not carry show as ``-``.
    """
    given = report.model_fields_set
    transcript = report.state.transcript
    return {
        "reason": report.reason if "reason" in given else None,
        "prompt": report.prompt,
        "completion_condition": report.completion_condition,
        "continuations": report.continuations if "continuations" in given else None,
        "max_continuations": report.max_continuations if "max_continuations" in given else None,
        "model_calls": report.model_calls if "model_calls" in given else None,
        "attempts": report.attempts,
        "attempted": list(report.attempted),
        "claims": list(report.why_stuck),
        "failed_checks": list(report.left.failed_checks),
        "open_items": list(report.left.open_items),
        "verifier": [
            {"round": r.round, **r.verifier.as_data()}
            for r in report.why_stuck
            if r.verifier is not None
        ],
        "checklist": list(report.state.checklist),
        "transcript": [m for m in transcript if isinstance(m, Mapping)]
        if isinstance(transcript, tuple)
        else [],
        "files": report.files.as_data() if report.files is not None else {},
    }


def routes(web: Web) -> list[BaseRoute]:
    """``/escalations``, ``/escalations/{id}`` and its two actions."""

    def queue(request: Request) -> Response:
        status = request.query_params.get("status", "open")
        if status not in ("open", "resolved", "requeued", "approved", "all"):
            raise HTTPException(400, f"status {status[:40]!r}: expected open, resolved, all...")
        after_text = request.query_params.get("after", "")
        after = int(after_text) if after_text.isdigit() else None
        rows = web.store.queue_page(
            status=None if status == "all" else status, after=after, limit=PAGE
        )
        return web.render(
            request,
            "escalations.html",
            rows=rows,
            status=status,
            next_after=rows[-1].id if len(rows) == PAGE else None,
            paged=after is not None,
            total=web.store.queue_count(status=status) if status != "all" else None,
        )

    def detail(request: Request) -> Response:
        escalation_id = int(request.path_params["escalation_id"])
        entry = web.store.escalation(escalation_id)
        if entry is None:
            raise HTTPException(404, f"no escalation {escalation_id}")
        task = web.store.get(entry.task_id)
        history = [
            a for a in web.store.actions(task_id=entry.task_id) if a.escalation_id == entry.id
        ]
        return web.render(
            request,
            "escalation.html",
            entry=entry,
            kind=entry.kind,
            task=task,
            report=report_view(entry.report),
            history=history,
        )

    async def resolve(request: Request) -> Response:
        form = await web.auth.form(request)
        escalation_id = int(request.path_params["escalation_id"])
        note = form_text(form, "note", "Note")
        entry = await run_in_threadpool(
            _act, web, request, escalation_id=escalation_id, note=note, instructions=None,
            requeue=False,
        )  # fmt: skip
        return RedirectResponse(f"/escalations/{entry}", status_code=303)

    async def requeue(request: Request) -> Response:
        form = await web.auth.form(request)
        escalation_id = int(request.path_params["escalation_id"])
        instructions = form_text(form, "instructions", "Instructions")
        note = form_text(form, "note", "Note")
        task_id = await run_in_threadpool(
            _act, web, request, escalation_id=escalation_id, note=note,
            instructions=instructions, requeue=True,
        )  # fmt: skip
        return RedirectResponse(f"/tasks/{_quoted(task_id)}", status_code=303)

    async def approve(request: Request) -> Response:
        form = await web.auth.form(request)
        escalation_id = int(request.path_params["escalation_id"])
        note = form_text(form, "note", "Approval note")
        task_id = await run_in_threadpool(
            _approve, web, request, escalation_id=escalation_id, note=note
        )
        return RedirectResponse(f"/tasks/{_quoted(task_id)}", status_code=303)

    return [
        Route("/escalations", queue),
        Route("/escalations/{escalation_id:int}", detail),
        Route("/escalations/{escalation_id:int}/resolve", resolve, methods=["POST"]),
        Route("/escalations/{escalation_id:int}/requeue", requeue, methods=["POST"]),
        Route("/escalations/{escalation_id:int}/approve", approve, methods=["POST"]),
    ]


def _quoted(task_id: str) -> str:
    from urllib.parse import quote

    return quote(task_id, safe="")


def _act(
    web: Web,
    request: Request,
    *,
    escalation_id: int,
    note: str | None,
    instructions: str | None,
    requeue: bool,
) -> str:
    """Resolve or requeue, then record who did it; the escalation id (resolve) or task id."""
    try:
        entry = web.store.resolve(
            escalation_id, note=note, requeue=requeue, instructions=instructions
        )
    except UserError as exc:
        status = 404 if str(exc).startswith("no escalation") else 409
        raise HTTPException(status, str(exc)) from None
    web.store.record_action(
        actor=web.who(request),
        action="requeue" if requeue else "resolve",
        task_id=entry.task_id,
        escalation_id=entry.id,
        detail=instructions if requeue else note,
    )
    return entry.task_id if requeue else str(entry.id)


def _approve(web: Web, request: Request, *, escalation_id: int, note: str | None) -> str:
    """Approve a review as ``donegate escalations approve ID`` does: a new signed certificate,
    ``done``, with who and when; the queue entry closed. The task id."""
    who = web.who(request)
    entry = web.store.escalation(escalation_id)
    if entry is None:
        raise HTTPException(404, f"no escalation {escalation_id}")
    try:
        if entry.kind != "review":
            raise UserError(f"escalation {entry.id} is not a review: resolve or requeue it")
        if entry.status != "open":
            raise UserError(f"review {entry.id} is already {entry.status}")
        pending = entry.report.review.certificate if entry.report.review is not None else ""
        if not pending:
            raise UserError(f"review {entry.id}: its report names no certificate to approve")
        path = approve_certificate(pending, by=who, note=note)
        try:
            web.store.approve(entry.id, by=who, note=note, certificate=str(path))
        except BaseException:
            Path(path).unlink(missing_ok=True)  # the queue did not take it: no stray "done"
            raise
    except UserError as exc:
        raise HTTPException(409, str(exc)) from None
    web.store.record_action(
        actor=who, action="approve", task_id=entry.task_id, escalation_id=entry.id, detail=note
    )
    return entry.task_id
