"""Evidence: every tool call the harness answered and its raw output, recorded by the harness.

Its records are `donegate.records.evidence.EvidenceRecord` (the loop's `ToolCallRecord` with
its digests); this module is the sink that numbers and keeps them.

`Evidence` is an `EventSink` on the loop's `ToolCalled` events, so what it holds is what the tools
actually returned, never what the model says they returned. Each record carries SHA-256 digests
of its output and of the whole record; certificates bind those digests.

A record keeps at most `EVIDENCE_OUTPUT_CAP` bytes of an output (its head and tail, with a marker
naming the whole output's size and SHA-256), so one huge tool result cannot swell the evidence
and every certificate that embeds it; `output_digest` is always the digest of the whole.
"""

from __future__ import annotations

import threading
import time

from donegate.events import Event, ModelCalled, ToolCalled
from donegate.records.evidence import EvidenceRecord, digest_text
from donegate.results import ToolCallRecord

__all__ = ["Evidence"]


class Evidence:
    """The harness's record of tool calls; an `EventSink` to pass to the loop."""

    def __init__(self) -> None:
        self._records: list[EvidenceRecord] = []
        self._lock = threading.Lock()
        self.step = 0
        """The last model call seen."""

    def __call__(self, event: Event) -> None:
        """Record `ToolCalled` events; follow the step number from `ModelCalled`."""
        if isinstance(event, ModelCalled):
            self.step = event.step
        elif isinstance(event, ToolCalled):
            self.add(event)

    def add(self, event: ToolCalled | ToolCallRecord) -> EvidenceRecord:
        """Record one answered call (the event's record)."""
        record = event.record if isinstance(event, ToolCalled) else event
        with self._lock:
            entry = EvidenceRecord.of(record, index=len(self._records), at=time.time())
            self._records.append(entry)
        return entry

    @property
    def records(self) -> tuple[EvidenceRecord, ...]:
        """Every record, in the order the calls were answered."""
        with self._lock:
            return tuple(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def digest(self) -> str:
        """One SHA-256 over every record's digest, in order."""
        return digest_text("\n".join(r.digest for r in self.records))

    def render(self, *, limit: int = 40, output_chars: int = 1500) -> str:
        """The last `limit` records as text for a verifier, outputs cut to their tail."""
        records = self.records
        if not records:
            return "(no tool calls were made)"
        shown = records[-limit:]
        lines = []
        if len(records) > len(shown):
            lines.append(f"({len(records) - len(shown)} earlier calls not shown)")
        for r in shown:
            state = "not run" if not r.executed else "error" if r.is_error else "ok"
            output = r.output
            if len(output) > output_chars:
                output = f"[...{len(output) - output_chars} chars cut...]" + output[-output_chars:]
            lines.append(
                f"#{r.index} step {r.step} {r.tool}({r.arguments_raw}) [{state}]\n{output}"
            )
        return "\n\n".join(lines)
