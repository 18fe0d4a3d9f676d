"""The human queue: the list (oldest first), one entry's report, and Resolve / Requeue.

The actions are `donegate.review`'s, the same ``donegate escalations resolve|approve`` call,
taken by the signed-in reviewer (an ad-hoc ``--token`` gets 403). A review (a ``closure:
human`` task whose claim passed every gate) can also be approved; resolving a review rejects it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from donegate import review
from donegate.errors import NotAReviewer, UserError
from donegate.records.report import EscalationReport
from donegate.server._web import Web

__all__ = ["MAX_TEXT", "form_text", "refused", "report_view", "routes"]

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


def budget_extra_field(text: str | None) -> dict[str, float] | None:
    """The requeue form's "More budget" (``usd=0.50``, ``tokens=10000``, or both separated by
    a space or comma), read as ``--budget-extra`` reads it; 400 naming what was wrong."""
    if text is None:
        return None
    from donegate.spend import parse_extra

    extra: dict[str, float] = {}
    try:
        for item in text.replace(",", " ").split():
            kind, amount = parse_extra(item)
            extra[kind] = extra.get(kind, 0.0) + amount
    except UserError as exc:
        raise HTTPException(400, f"More budget: {exc}") from None
    return extra


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
        extra = budget_extra_field(form_text(form, "budget_extra", "More budget"))
        task_id = await run_in_threadpool(
            _act, web, request, escalation_id=escalation_id, note=note,
            instructions=instructions, requeue=True, budget_extra=extra,
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
    budget_extra: dict[str, float] | None = None,
) -> str:
    """Resolve or requeue as the reviewer acting; the escalation id (resolve) or task id."""
    actor = web.actor(request, "ui")
    with refused():
        if requeue:
            entry = review.requeue(
                web.store, escalation_id, actor=actor, instructions=instructions, note=note,
                budget_extra=budget_extra,
            )  # fmt: skip
        else:
            entry = review.resolve(web.store, escalation_id, actor=actor, note=note)
    return entry.task_id if requeue else str(entry.id)


def _approve(web: Web, request: Request, *, escalation_id: int, note: str | None) -> str:
    """Approve a review as ``donegate escalations approve ID`` does (`donegate.review.approve`):
    a new signed certificate naming the reviewer and the ``ui`` channel; the task id."""
    actor = web.actor(request, "ui")
    with refused():
        approved = review.approve(web.store, escalation_id, actor=actor, note=note)
    return approved.escalation.task_id


@contextmanager
def refused() -> Iterator[None]:
    """A review action's refusal as an HTTP error: 403 not a reviewer, 404 no such entry,
    409 not open (or not a review)."""
    try:
        yield
    except NotAReviewer as exc:
        raise HTTPException(403, str(exc)) from None
    except UserError as exc:
        status = 404 if str(exc).startswith("no escalation") else 409
        raise HTTPException(status, str(exc)) from None
