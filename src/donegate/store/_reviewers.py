"""The people who may act on the human queue: a name and the KDF hash of a secret apiece.

The store never sees a secret: `donegate.review.reviewers` makes it, hashes it and checks it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc

from donegate.errors import UserError
from donegate.store._db import Database, patient
from donegate.store._schema import reviewers
from donegate.store.base import Reviewer

__all__ = ["ReviewersMixin"]


def _reviewer(row: Any) -> Reviewer:
    return Reviewer(name=row.name, secret_hash=row.secret_hash, created_at=row.created_at)


class ReviewersMixin:
    """`donegate.store.protocols.Reviewers` on the ``reviewers`` table."""

    _db: Database
    clock: Callable[[], float]

    @patient
    def add_reviewer(self, name: str, secret_hash: str) -> Reviewer:
        now = self.clock()
        taken = UserError(f"reviewer {name!r} exists already: remove it first")
        try:
            with self._db.write() as conn:
                if conn.execute(
                    sa.select(reviewers.c.name).where(reviewers.c.name == name)
                ).first():
                    raise taken
                conn.execute(
                    sa.insert(reviewers).values(name=name, secret_hash=secret_hash, created_at=now)
                )
        except exc.IntegrityError:  # added by another process between the read and the insert
            raise taken from None
        return Reviewer(name=name, secret_hash=secret_hash, created_at=now)

    @patient
    def reviewer(self, name: str) -> Reviewer | None:
        with self._db.read() as conn:
            row = conn.execute(sa.select(reviewers).where(reviewers.c.name == name)).first()
        return None if row is None else _reviewer(row)

    @patient
    def reviewers(self) -> list[Reviewer]:
        with self._db.read() as conn:
            rows = conn.execute(sa.select(reviewers).order_by(reviewers.c.name)).all()
        return [_reviewer(r) for r in rows]

    @patient
    def remove_reviewer(self, name: str) -> bool:
        with self._db.write() as conn:
            gone = conn.execute(sa.delete(reviewers).where(reviewers.c.name == name))
        return bool(gone.rowcount)
