"""The review actions, once: approve a review, resolve an entry, requeue its task.

The CLI (``donegate escalations approve|resolve``), the review UI and the JSON API
(`donegate.server`) call these and nothing else, so each rule holds on every path:

1. the actor is a reviewer the store knows still (`Actor` comes from `authenticate` on a
   secret, or from a server session that one opened), else `NotAReviewer` before anything
   changes;
2. an approval signs a new ``done`` certificate naming the reviewer, the channel, the OS user
   and the time, and only then closes the queue entry (a failed close removes that certificate);
3. every action is kept in the store's ``actions`` with who did it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from donegate.errors import NotAReviewer, UserError
from donegate.harness.certificate import approve_certificate
from donegate.review.reviewers import Actor
from donegate.store import Escalation, ReviewAction, Reviewers, ReviewQueue

__all__ = ["Approved", "ReviewStore", "approve", "approve_file", "requeue", "resolve"]


class ReviewStore(ReviewQueue, Reviewers, Protocol):
    """What the review actions need of a store (`donegate.store.sql.SqlStore` has it all)."""

    def record_action(
        self,
        *,
        actor: str,
        action: str,
        task_id: str,
        escalation_id: int | None = None,
        detail: str | None = None,
    ) -> ReviewAction:
        """Keep who did what, and when."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class Approved:
    """An approved review: the queue entry as closed, and the new certificate."""

    escalation: Escalation
    """The review, now ``approved``."""
    certificate: Path
    """The signed ``done`` certificate naming the reviewer."""


def approve(
    store: ReviewStore, escalation_id: int, *, actor: Actor, note: str | None = None
) -> Approved:
    """Approve review `escalation_id`: its task becomes ``done`` with a new certificate.

    `UserError` when there is no such entry, it is not an open review, or its report names no
    certificate awaiting review.
    """
    _check(store, actor)
    entry = store.escalation(escalation_id)
    if entry is None:
        raise UserError(f"no escalation {escalation_id}")
    if entry.kind != "review":
        raise UserError(f"escalation {entry.id} is not a review: resolve or requeue it")
    if entry.status != "open":
        raise UserError(f"review {entry.id} is already {entry.status}")
    pending = entry.report.review.certificate if entry.report.review is not None else ""
    if not pending:
        raise UserError(f"review {entry.id}: its report names no certificate to approve")
    path = _sign(pending, actor, note)
    try:
        closed = store.approve(
            entry.id,
            by=actor.name,
            note=note,
            certificate=str(path),
            channel=actor.channel,
            os_user=actor.os_user,
        )
    except BaseException:
        path.unlink(missing_ok=True)  # the queue did not take it: no stray "done"
        raise
    store.record_action(
        actor=actor.name, action="approve", task_id=entry.task_id, escalation_id=entry.id,
        detail=note,
    )  # fmt: skip
    return Approved(escalation=closed, certificate=path)


def approve_file(
    store: Reviewers, certificate: str | Path, *, actor: Actor, note: str | None = None
) -> Path:
    """Approve the certificate a ``donegate run`` of a ``closure: human`` task left awaiting
    review (no queue entry); the new certificate's path."""
    _check(store, actor)
    return _sign(certificate, actor, note)


def resolve(
    store: ReviewStore, escalation_id: int, *, actor: Actor, note: str | None = None
) -> Escalation:
    """Close an entry with a note; a review closed so is rejected (its task ends ``failed``)."""
    _check(store, actor)
    entry = store.resolve(escalation_id, note=note, by=actor.name)
    store.record_action(
        actor=actor.name, action="resolve", task_id=entry.task_id, escalation_id=entry.id,
        detail=note,
    )  # fmt: skip
    return entry


def requeue(
    store: ReviewStore,
    escalation_id: int,
    *,
    actor: Actor,
    instructions: str | None = None,
    note: str | None = None,
    budget_extra: Mapping[str, float] | None = None,
) -> Escalation:
    """Run the entry's task again (a new generation), `instructions` added to its prompt and
    its budget raised by `budget_extra` (``{"usd": 0.5}``)."""
    _check(store, actor)
    entry = store.resolve(
        escalation_id, note=note, requeue=True, instructions=instructions,
        budget_extra=budget_extra, by=actor.name,
    )  # fmt: skip
    store.record_action(
        actor=actor.name, action="requeue", task_id=entry.task_id, escalation_id=entry.id,
        detail=instructions,
    )  # fmt: skip
    return entry


def _check(store: Reviewers, actor: Actor) -> None:
    """The actor is still a reviewer (one removed since a UI login is not)."""
    if store.reviewer(actor.name) is None:
        raise NotAReviewer(f"{actor.name!r} is not a reviewer (donegate reviewers list)")


def _sign(certificate: str | Path, actor: Actor, note: str | None) -> Path:
    return approve_certificate(
        certificate, by=actor.name, note=note, channel=actor.channel, os_user=actor.os_user
    )
