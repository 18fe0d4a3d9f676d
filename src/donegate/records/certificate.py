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
import json
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import pydantic

from donegate.errors import UserError

__all__ = [
    "KIND",
    "MAX_CERTIFICATE_BYTES",
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
    "RecordedFile",
    "Review",
    "Signature",
    "Times",
    "TranscriptSection",
    "read_certificate",
    "refer_outputs",
    "transcript_references",
]

KIND: Final = "donegate.certificate"
VERSION: Final = 3
"""3: each tool output stored once (the transcript refers to evidence by digest); 2: signed,
with closure, status and protected files (1 was unsigned and cannot verify)."""
READABLE_VERSIONS = (2, 3)
"""The versions `donegate verify` proves."""
MAX_CERTIFICATE_BYTES = 64 * 1024 * 1024
"""A larger file is refused unread: a certificate is input like any other."""


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
    tree: dict[str, str] | None = None
    """Every other file Python or a test runner may load, path -> digest, at the start (what
    files that change how checks run are judged against); absent in older certificates."""
    allow: tuple[str, ...] = ()
    """The task's ``allow:`` globs (paths the agent may change although they change how checks
    run)."""


class EvidenceEntry(_Value):
    """One evidence record's summary: what the evidence digest binds."""

    index: int
    step: int
    tool: str
    idempotency_key: str | None = None
    output_digest: str
    digest: str
    """The record's digest (`donegate.records.evidence.record_digest`)."""


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
    """A person's approval of a ``closure: human`` certificate.

    `channel` and `os_user` are absent on approvals made before reviewers existed; such
    certificates read and verify as written.
    """

    approved_by: str
    """The reviewer (``donegate reviewers add``) whose secret came with the approval."""
    approved_at: str
    note: str | None = None
    reviewed_certificate: str
    """The digest of the certificate approved."""
    channel: Literal["ui", "api", "cli"] | None = None
    """How the approval came: the review UI, the JSON API or the CLI (``--token-file``)."""
    os_user: str | None = None
    """The login name of the process that made the approval (the server's, for ui and api)."""


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
    """The harness's signature over the certificate (`donegate.harness.signing`): Ed25519, or
    HMAC-SHA256 on legacy ones."""

    alg: str
    key_id: str
    value: str


class RecordedFile(_Value):
    """A file a certificate names, with its digest when certified: ``verify`` with no flags
    finds the task and its check code by these, and says which one is gone or changed."""

    path: str
    """The absolute path when certified."""
    digest: str
    """SHA-256 hex of the file's bytes."""


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
    isolation: dict[str, str] | None = None
    """Where the checks ran: ``{"backend": "sandbox"|"process", "version": "bubblewrap ..."}``."""
    key_id: str | None = None
    """The id of the Ed25519 key that signed it (`donegate key show`); absent on legacy ones."""
    agent: dict[str, Any] | None = None
    """An agent CLI's session: which CLI (name, version, exit code, session id)."""
    agent_transcript: dict[str, Any] | None = None
    """A pointer to an agent CLI's transcript (path, SHA-256, size), never its content."""
    host: dict[str, Any] | None = None
    """The framework whose loop the gate ran inside (`donegate.integrations`): its ``name`` and
    ``version``, and ``tools_isolated: false``, since the framework ran the agent's tools and
    donegate ran only the checks."""
    spend: dict[str, Any] | None = None
    """What the task's model calls spent: ``tokens``, ``usd``, ``calls`` and a line per model
    and role (`donegate.results.Spend.as_data`); absent when nothing was metered."""
    task_file: RecordedFile | None = None
    """The task file the run was given (absent: a task built in Python)."""
    check_path: tuple[str, ...] | None = None
    """Where the ``python:`` checks imported from (the task's ``check_path``)."""
    check_sources: tuple[RecordedFile, ...] | None = None
    """The ``python:`` checks' module files found on `check_path`, as certified."""
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


def read_certificate(path: str | Path) -> dict[str, Any]:
    """A certificate file's JSON as read, unverified (`UserError` when it is not one).

    What the signature covers: `verify_certificate` proves these values, not a parse of them.
    """
    file = Path(path)
    try:
        # Non-blocking: opening a FIFO must not wait for a writer; only a regular file is read.
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise UserError(f"{file}: not a regular file; a certificate is read from a file")
            raw = f.read(MAX_CERTIFICATE_BYTES + 1)
    except OSError as exc:
        raise UserError(f"{file}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_CERTIFICATE_BYTES:
        raise UserError(f"{file}: larger than {MAX_CERTIFICATE_BYTES} bytes; not a certificate")
    try:
        cert = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
        raise UserError(f"{file}: not valid JSON: {exc}") from None
    if not isinstance(cert, dict) or cert.get("kind") != KIND:
        raise UserError(f"{file}: not a donegate certificate")
    return cert
