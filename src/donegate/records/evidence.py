"""An answered tool call as evidence: the loop's `ToolCallRecord`, numbered, capped, digested.

One record per answered call: `EvidenceRecord` embeds the loop's `ToolCallRecord` (never copies
its fields) and adds what certificates bind: the output as kept, the whole output's SHA-256 and
the record's own digest. The harness's `Evidence` sink builds these; certificates, reports, the
worker's journal and the hooks carry them.

A record keeps at most `EVIDENCE_OUTPUT_CAP` bytes of an output (its head and tail, with a marker
naming the whole output's size and SHA-256), so one huge tool result cannot swell the evidence
and every certificate that embeds it; `output_digest` is always the digest of the whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from donegate.codec import canonical_json, messages_to_json
from donegate.results import ToolCallRecord

__all__ = [
    "EVIDENCE_OUTPUT_CAP",
    "EvidenceRecord",
    "cap_output",
    "digest_text",
    "record_digest",
    "transcript_digest",
]

EVIDENCE_OUTPUT_CAP = 64 * 1024
"""Bytes of a tool output a record keeps (head and tail); its digest covers all of it."""


def digest_text(text: str) -> str:
    """SHA-256 hex of `text` as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_canonical = canonical_json


@dataclass(frozen=True, kw_only=True, slots=True)
class EvidenceRecord:
    """One answered tool call as the harness keeps it: the loop's `ToolCallRecord`, numbered,
    its output capped, and digested for certificates."""

    index: int
    """0-based position in the run's evidence."""
    record: ToolCallRecord
    """The call as the loop answered it (the one record of it; the fields below read it)."""
    output: str = ""
    """The raw output the tool returned (what the model was shown), cut to its head and tail
    when longer than `EVIDENCE_OUTPUT_CAP` bytes."""
    at: float = 0.0
    """Unix time the harness recorded it."""
    output_digest: str = ""
    """SHA-256 hex of the whole output (of `output` itself unless it was cut)."""
    output_bytes: int = 0
    """The whole output's size in UTF-8 bytes."""
    digest: str = ""
    """SHA-256 hex of the record's canonical JSON (tool, arguments, output, flags, key)."""

    @classmethod
    def of(cls, record: ToolCallRecord, *, index: int, at: float) -> EvidenceRecord:
        """The harness's entry for `record`: its output capped, whole-output and record digests."""
        content = record.result.content
        whole = content.encode("utf-8", errors="replace")
        output = cap_output(content)
        return cls(
            index=index,
            record=record,
            output=output,
            at=at,
            output_digest=hashlib.sha256(whole).hexdigest(),
            output_bytes=len(whole),
            digest=record_digest(
                tool=record.call.name,
                arguments_raw=record.call.arguments_raw,
                output=output,
                is_error=record.result.is_error,
                executed=record.executed,
                idempotency_key=record.idempotency_key,
            ),
        )

    @property
    def step(self) -> int:
        """The model call that asked for it."""
        return self.record.step

    @property
    def tool(self) -> str:
        """The tool name."""
        return self.record.call.name

    @property
    def call_id(self) -> str:
        """The model's call id."""
        return self.record.call.id

    @property
    def arguments(self) -> Mapping[str, Any]:
        """The parsed arguments (empty when they did not parse)."""
        return dict(self.record.call.arguments or {})

    @property
    def arguments_raw(self) -> str:
        """The arguments exactly as the model sent them."""
        return self.record.call.arguments_raw

    @property
    def is_error(self) -> bool:
        """True when the tool failed or the call was rejected."""
        return self.record.result.is_error

    @property
    def executed(self) -> bool:
        """False when the harness answered without running the tool (limits, replays)."""
        return self.record.executed

    @property
    def idempotency_key(self) -> str | None:
        """The key a side-effecting call ran under."""
        return self.record.idempotency_key

    def as_data(self) -> dict[str, Any]:
        """The record as plain JSON-ready values."""
        return {
            "index": self.index,
            "step": self.step,
            "tool": self.tool,
            "call_id": self.call_id,
            "arguments": dict(self.arguments),
            "arguments_raw": self.arguments_raw,
            "output": self.output,
            "is_error": self.is_error,
            "executed": self.executed,
            "idempotency_key": self.idempotency_key,
            "at": self.at,
            "output_digest": self.output_digest,
            "output_bytes": self.output_bytes,
            "digest": self.digest,
        }


def record_digest(
    *,
    tool: str,
    arguments_raw: str,
    output: str,
    is_error: bool,
    executed: bool,
    idempotency_key: str | None,
) -> str:
    """The digest a record carries, recomputable from its fields."""
    return digest_text(
        _canonical(
            {
                "tool": tool,
                "arguments": arguments_raw,
                "output_digest": digest_text(output),
                "is_error": is_error,
                "executed": executed,
                "idempotency_key": idempotency_key,
            }
        )
    )


def cap_output(text: str, cap: int = EVIDENCE_OUTPUT_CAP) -> str:
    """`text`, or its head and tail within `cap` UTF-8 bytes around a marker naming the whole.

    The marker carries the whole output's size and SHA-256, so the record digest, computed over
    what is kept, still binds the whole.
    """
    data = text.encode("utf-8", errors="replace")
    if len(data) <= cap:
        return text
    digest = hashlib.sha256(data).hexdigest()
    half = (cap - 200) // 2  # 200: room for the marker
    omitted = len(data) - 2 * half
    marker = (
        f"\n[... {omitted} bytes omitted; the whole output was {len(data)} bytes,"
        f" sha256 {digest} ...]\n"
    )
    head = data[:half].decode("utf-8", errors="ignore")
    return head + marker + data[-half:].decode("utf-8", errors="ignore")


def transcript_digest(messages: Sequence[Any], *, as_json: bool = False) -> str:
    """SHA-256 of a transcript's canonical JSON (messages through `donegate.codec`; entries that
    are JSON data already, as a certificate embeds them, digested as they are). `as_json` says
    every entry is JSON data already (a certificate's stored transcript): none is converted."""
    return digest_text(_canonical(list(messages) if as_json else messages_to_json(list(messages))))
