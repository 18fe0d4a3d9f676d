"""`StoreLedger`: the effects ledger of one lease, as a `donegate.tools.EffectLedger`.

A recorded result is returned without running the tool again. A call begun but never recorded
(the worker died mid-effect) has an unknown outcome: it is begun again under the same key only
when the caller asks (``reissue``: its tool honours the key); otherwise `begin` answers False and
`donegate.tools.begin_effect` settles it (the tool's reconcile, or an escalation). All of it
only for the call the key was begun for: another call under the key raises `EffectDivergence`.
`begin` and `record` are fenced by the lease: a worker that lost its lease gets `LeaseLost`
before it can start a side effect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from donegate.messages import ToolCall, ToolResult

if TYPE_CHECKING:
    from donegate.store.base import Lease, TaskStore

__all__ = ["StoreLedger"]


class StoreLedger:
    """An `EffectLedger` writing to a `TaskStore` under one lease."""

    def __init__(self, store: TaskStore, lease: Lease) -> None:
        self.store = store
        self.lease = lease
        self.replayed: list[str] = []
        """Keys answered from the ledger in this run (telemetry, tests)."""

    def lookup(self, key: str, call: ToolCall) -> ToolResult | None:
        """The recorded result of `call` under `key`, if it finished."""
        result = self.store.effect_lookup(key, call)
        if result is not None:
            self.replayed.append(key)
        return result

    def begin(self, key: str, call: ToolCall, *, reissue: bool = True) -> bool:
        """Journal that `call` is about to run under `key` (fenced by the lease); True if it may.

        False when an earlier lease began `key` and never recorded it and `reissue` is False.
        """
        return self.store.effect_begin(self.lease, key, call, reissue=reissue)

    def record(self, key: str, result: ToolResult) -> None:
        """Journal the result (fenced by the lease)."""
        self.store.effect_record(self.lease, key, result)
