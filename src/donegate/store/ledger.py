"""`StoreLedger`: the effects ledger of one lease, as a `donegate.tools.EffectLedger`.

A recorded result is returned without running the tool again. A call begun but never recorded
(the worker died mid-effect) has an unknown outcome: it is begun again under the same key only
when the caller asks (``reissue``: its tool honours the key); otherwise `begin` answers False and
`donegate.tools.begin_effect` settles it (the tool's reconcile, or an escalation). All of it
only for the call the key was begun for: another call under the key raises `EffectDivergence`.
`begin` and `record` are fenced by the lease: a worker that lost its lease gets `LeaseLost`
before it can start a side effect.

A call costs two writes, not three: `lookup` inserts the key as begun (an existing key is
learned from the insert's conflict, so there is no separate read), and the `begin` that follows
it is answered from that; a `journal` (the run's `JournalSink`) lends what it has not written
yet, the step's turn among them, to ride with that insert in one transaction. The calls of one
batch, which run side by side, are looked up together (`lookup_batch`): their begins and the
step's turn are one write, and each call's result one more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from donegate.messages import ToolCall, ToolResult
from donegate.tools import ensure_same_call

if TYPE_CHECKING:
    from donegate.store.base import HeldEffect, JournalWrite, Lease
    from donegate.store.protocols import LedgerStore

__all__ = ["Rider", "StoreLedger"]

R = TypeVar("R")


class Rider(Protocol):
    """A run's journal whose unwritten rows may ride with another fenced write."""

    def ride(self, write: Callable[[JournalWrite], R]) -> R:
        """Call `write` with the rows not yet written (empty: none), then count them written.

        Writes are serialized: a second caller waits until the first one's rows committed.
        """
        ...


class StoreLedger:
    """An `EffectLedger` writing to a store (`LedgerStore`) under one lease."""

    def __init__(self, store: LedgerStore, lease: Lease, journal: Rider | None = None) -> None:
        self.store = store
        self.lease = lease
        self.journal = journal
        """Where the run's unwritten journal rows come from, to ride with a begin."""
        self.replayed: list[str] = []
        """Keys answered from the ledger in this run (telemetry, tests)."""
        self._opened: dict[str, tuple[ToolCall, HeldEffect | None]] = {}
        """Keys `lookup` left begun: the call, and what the key held (None: begun by it)."""
        self._batched: dict[str, tuple[ToolCall, HeldEffect | None]] = {}
        """Keys `lookup_batch` wrote and no `lookup` has asked for yet, as `_opened` holds them."""

    def lookup(self, key: str, call: ToolCall) -> ToolResult | None:
        """The recorded result of `call` under `key`, if it finished; else the key is begun.

        The `begin` that follows a None is answered from what this write learned (or what
        `lookup_batch` learned for this key).
        """
        early = self._batched.pop(key, None)
        if early is not None:
            ensure_same_call(key, early[0], call)
            held = early[1]
        else:
            held = self._ride(lambda rows: self.store.effect_open(self.lease, key, call, **rows))
        if held is not None:
            ensure_same_call(key, held.call, call)
            if held.state == "done" and held.result is not None:
                self.replayed.append(key)
                return held.result
        self._opened[key] = (call, held)
        return None

    def lookup_batch(self, calls: Sequence[tuple[str, ToolCall]]) -> None:
        """Look up a batch's side-effecting calls (distinct keys) in one write, with the run's
        unwritten journal rows; each call's `lookup` is then answered from it."""
        helds = self._ride(lambda rows: self.store.effects_open(self.lease, calls, **rows))
        for (key, call), held in zip(calls, helds, strict=True):
            self._batched[key] = (call, held)

    def _ride(self, write: Callable[[JournalWrite], R]) -> R:
        """`write` with the journal's unwritten rows riding along (none without a journal)."""
        return self.journal.ride(write) if self.journal is not None else write({})

    def begin(self, key: str, call: ToolCall, *, reissue: bool = True) -> bool:
        """Journal that `call` is about to run under `key` (fenced by the lease); True if it may.

        False when an earlier lease began `key` and never recorded it and `reissue` is False.
        """
        opened = self._opened.pop(key, None)
        if opened is not None:
            looked_up, held = opened
            ensure_same_call(key, looked_up, call)
            if held is None:  # `lookup` began it: it may run
                return True
            if not reissue:  # True only if this very lease began it (its answer was lost)
                return held.state == "begun" and held.epoch == self.lease.epoch
        return self.store.effect_begin(self.lease, key, call, reissue=reissue)

    def record(self, key: str, result: ToolResult) -> None:
        """Journal the result (fenced by the lease)."""
        self.store.effect_record(self.lease, key, result)
