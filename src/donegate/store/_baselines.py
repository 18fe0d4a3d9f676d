"""Protected-file baselines: the manifest a task's first run took, kept for every later run.

The harness digests the task's protected files before the agent starts and fails the task if
they change. A run resumed on another worker (its lease lost: the worker died, or the agent,
which runs as the same user, killed it) must not take that manifest again from a workdir the
agent may already have changed: the first manifest stored wins, and every run reads it. The
write is fenced like the journal's, so only the lease holder keeps one. A task's first run
(nothing can be stored yet) hands its manifest to its first journal write instead
(`JournalWrite.baseline`): no commit of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from donegate.codec import dumps, loads
from donegate.store._db import Database, patient
from donegate.store._journal import fence, keep_baseline
from donegate.store.base import Lease

__all__ = ["BaselineMixin"]


class BaselineMixin:
    """The baselines half of `SqlStore`."""

    _db: Database
    clock: Callable[[], float]

    @patient
    def baseline(self, lease: Lease, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """The task's stored manifest; `manifest` (taken now) is stored when none is yet."""
        now = self.clock()
        with self._db.write() as conn:
            fence(conn, lease, now)
            kept: dict[str, Any] = loads(
                keep_baseline(conn, lease.task_id, dumps(dict(manifest)), now)
            )
        return kept
