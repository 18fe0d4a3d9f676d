"""The certificate as a typed, frozen value: its sections and their versioned JSON form.

The JSON form is the contract (files on disk, ``donegate verify``, the JSON API,
docs/certificates.md): the field names here are the file's keys. `Certificate.as_data` gives
exactly the keys a certificate was built or read with (`exclude_unset`), so a certificate read
from a file and dumped again is the same JSON, and its signature still holds over it.

Versions: 2 embeds every tool output twice (in the evidence and in the transcript); 3 (written
now) stores each once: a transcript's tool result whose output is an evidence record's carries
that record's ``output_digest`` instead of its ``content`` (`refer_outputs`), and the transcript
digest covers that stored form. Both are read and verified.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal

import pydantic

__all__ = [
    "KIND",
    "READABLE_VERSIONS",
    "VERSION",
    "Certificate",
    "CertificateCheck",
    "ChecklistEntry",
    "Closure",
    "EvidenceData",
    "EvidenceEntry",
    "EvidenceSection",
    "ProtectedSection",
    "Review",
    "Signature",
    "Times",
    "TranscriptSection",
    "refer_outputs",
    "transcript_references",
]

KIND: Final = "donegate.certificate"
VERSION: Final = 3
"""3: each tool output stored once (the transcript refers to evidence by digest); 2: signed,
with closure, status and protected files (1 was unsigned and cannot verify)."""
READABLE_VERSIONS = (2, 3)
"""The versions `donegate verify` proves."""


class _Value(pydantic.BaseModel):
    """A frozen part of a certificate; unknown keys are refused (a certificate is input)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")


class CertificateCheck(_Value):
    """One acceptance check as certified."""

    name: str
    """The check's stable name."""
    kind: str
    """``run``, ``file_exists``, ``sql``..."""
    spec: dict[str, Any] | None = None
    """The check as the task file wrote it (what ``verify`` re-runs); None when not recorded."""
    command: str | None = None
    """What ran (None for file checks)."""
    exit_code: int | None = None
    """A ``run`` check's exit code."""
    passed: bool
    """Whether it passed at the accepted claim."""
    detail: str
    """One line: what passed or why it failed."""
    output_digest: str
    """SHA-256 hex of the whole output."""


class ProtectedSection(_Value):
    """The protected files' digests at the start (`donegate.harness.protect.Manifest`)."""

    patterns: tuple[str, ...] = ()
    """The task's ``protect:`` globs, and those protected whatever the task lists."""
    pinned: tuple[str, ...] = ()
    """Files protected by name (the task file, check modules)."""
    files: dict[str, str] = pydantic.Field(default_factory=dict)
    """Relative path -> SHA-256 hex."""


class EvidenceEntry(_Value):
    """One evidence record's summary: what the evidence digest binds."""

    index: int
    step: int
    tool: str
    idempotency_key: str | None = None
    output_digest: str
    digest: str
    """The record's digest (`donegate.harness.evidence.record_digest`)."""


class EvidenceData(_Value):
    """One evidence record as embedded (`EvidenceRecord.as_data`)."""

    index: int
    step: int
    tool: str
    call_id: str
    arguments: dict[str, Any] = pydantic.Field(default_factory=dict)
    arguments_raw: str
    output: str
    """The output the tool returned, cut to its head and tail past the evidence cap."""
    is_error: bool
    executed: bool
    idempotency_key: str | None = None
    at: float
    output_digest: str
    """SHA-256 hex of the whole output."""
    output_bytes: int
    digest: str


class EvidenceSection(_Value):
    """Every tool call the harness answered."""

    count: int
    digest: str
    """SHA-256 over the records' digests, in order."""
    records: tuple[EvidenceEntry, ...] = ()
    data: tuple[EvidenceData, ...] | None = None
    """The records themselves (None only in a body not yet written)."""


class TranscriptSection(_Value):
    """The run's messages."""

    messages: int
    digest: str
    """SHA-256 of the stored messages' canonical JSON."""
    data: tuple[dict[str, Any], ...] | None = None
    """The messages as JSON (version 3: a tool output held by the evidence is referred to by
    its ``output_digest``)."""


class Review(_Value):
    """A person's approval of a ``closure: human`` certificate."""

    approved_by: str
    approved_at: str
    note: str | None = None
    reviewed_certificate: str
    """The digest of the certificate approved."""


class Closure(_Value):
    """Who closed the task, and whether checks backed it."""

    mode: Literal["checks", "human", "model"]
    backed_by_checks: bool
    statement: str
    """One sentence a person reads."""
    review: Review | None = None


class ChecklistEntry(_Value):
    """One checklist item at the end."""

    item: str
    status: str
    note: str | None = None
    since_step: int | None = None
    updated_step: int | None = None
    added_by_model: bool | None = None


class Times(_Value):
    """When the run started and finished (ISO 8601, UTC)."""

    started: str
    finished: str
    duration_s: float


class Signature(_Value):
    """The harness's HMAC over the certificate (`donegate.harness.signing`)."""

    alg: str
    key_id: str
    value: str


class Certificate(_Value):
    """A completion certificate: what a finished task was checked against, signed."""

    kind: Literal["donegate.certificate"] = KIND
    version: Literal[2, 3] = VERSION
    status: Literal["done", "awaiting_review"]
    """``awaiting_review`` until a person approves a ``closure: human`` task."""
    task_id: str
    completion_condition: str
    prompt_digest: str
    workdir: str
    closure: Closure
    checks: tuple[CertificateCheck, ...]
    protected: ProtectedSection
    evidence: EvidenceSection
    transcript: TranscriptSection
    checklist: tuple[ChecklistEntry, ...]
    models: dict[str, str | None]
    times: Times
    continuations: int
    model_calls: int
    agent: dict[str, Any] | None = None
    """An agent CLI's session: which CLI (name, version, exit code, session id)."""
    agent_transcript: dict[str, Any] | None = None
    """A pointer to an agent CLI's transcript (path, SHA-256, size), never its content."""
    digest: str = ""
    """SHA-256 of the canonical JSON without ``digest`` and ``signature``."""
    signature: Signature | None = None

    def as_data(self) -> dict[str, Any]:
        """The JSON form: the keys it was built or read with, nothing added."""
        return self.model_dump(mode="json", exclude_unset=True)

    @classmethod
    def from_data(cls, data: Any) -> Certificate:
        """A certificate from its JSON form (`pydantic.ValidationError` when it is not one)."""
        return cls.model_validate(data)

    def transcript_messages(self) -> list[dict[str, Any]]:
        """The transcript as JSON, each output it refers to filled in from the evidence (as the
        record keeps it: cut to its head and tail past the evidence cap)."""
        outputs = {r.output_digest: r.output for r in self.evidence.data or ()}
        out = []
        for message in self.transcript.data or ():
            parts = message.get("parts")
            if not isinstance(parts, list):
                out.append(message)
                continue
            filled = []
            for part in parts:
                ref = part.get("output_digest") if part_is_result(part) else None
                if isinstance(ref, str) and ref in outputs:
                    kept = {k: v for k, v in part.items() if k != "output_digest"}
                    filled.append({**kept, "content": outputs[ref]})
                else:
                    filled.append(part)
            out.append({**message, "parts": filled})
        return out


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()


def refer_outputs(messages: Sequence[Any], output_digests: Iterable[str]) -> list[Any]:
    """Version 3's stored transcript: a tool result whose content is an evidence output is
    replaced by a reference (its ``output_digest``), so each output is stored once.

    `messages` are the transcript as JSON values; a part that matches no evidence record keeps
    its content.
    """
    known = set(output_digests)
    if not known:
        return list(messages)
    out: list[Any] = []
    for message in messages:
        parts = message.get("parts") if isinstance(message, dict) else None
        if not isinstance(parts, list):
            out.append(message)
            continue
        stored = []
        for part in parts:
            content = part.get("content") if isinstance(part, dict) else None
            digest = _digest(content) if part_is_result(part) and isinstance(content, str) else ""
            if digest in known:
                kept = {k: v for k, v in part.items() if k != "content"}
                stored.append({**kept, "output_digest": digest})
            else:
                stored.append(part)
        out.append({**message, "parts": stored})
    return out


def part_is_result(part: Any) -> bool:
    """Whether a stored message part is a tool result."""
    return isinstance(part, dict) and part.get("kind") == "tool_result"


def transcript_references(messages: Iterable[Any]) -> list[str]:
    """The output digests a stored transcript refers to, in order."""
    refs = []
    for message in messages:
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if part_is_result(part) and "output_digest" in part:
                refs.append(str(part["output_digest"]))
    return refs
