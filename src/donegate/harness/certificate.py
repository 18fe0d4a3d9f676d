"""Completion certificates: what a finished task was checked against, signed by the harness.

A certificate is a typed, frozen `Certificate` (`donegate.records.certificate`, whose
JSON form is the file's) built by `build_certificate` and signed by `write_certificate`.

A certificate is one JSON file written under donegate's data directory (never the agent's
workdir) when a task is done, or awaits a person's review. It binds the task id, completion
condition and closure to each acceptance check (its spec, what ran, exit code, output digest),
the digests of the protected files at the start, the evidence the harness recorded and the
transcript (both embedded, each tool output once: the transcript refers to the evidence by
digest), the models and the times. ``digest`` is the SHA-256 of it all and
``signature`` an HMAC-SHA256 over it with the harness's key (`donegate.harness.signing`).

`verify_certificate` checks the signature first, then every digest, and runs nothing from a
certificate that fails; only then does it re-run the checks (the certified ones, or a task
file's once they are shown equal) and re-digest the protected files.

What a certificate proves, when its signature holds:
- a harness holding this key wrote it, and nothing in it changed since;
- at the accepted claim every listed check passed in the workdir, no protected file had
  changed since the start, and the checklist and verifier (when configured) agreed;
- with ``closure: human``, who approved it and when; with ``closure: model`` and no checks,
  ``backed_by_checks: false`` says plainly that no mechanical check backed it;
- the recorded evidence and transcript are the ones the run produced.

What it does not prove:
- that the checks are the right checks: a weak check passes weak work;
- anything outside the checks and protected paths (a file no check reads can be anything);
- that the world still holds: re-run with ``donegate verify`` (the default) to find out;
- anything at all once the key leaks: the agent's ``run_command`` and the code a ``run:`` check
  executes run as the harness's user, who can read ``$DONEGATE_HOME/signing.key`` and the
  environment; keep the key from the agent (another user, a sandbox) where that matters.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pydantic

from donegate.codec import canonical_json, messages_to_json
from donegate.errors import CheckEnvironmentError, UserError
from donegate.harness._proof import prove, rerun_checks, specs_to_rerun
from donegate.harness._recorded import bind_check_path, recorded_sources, source_problems
from donegate.harness.evidence import Evidence
from donegate.harness.poison import review_changes
from donegate.harness.protect import Manifest
from donegate.harness.signing import PublicKey, canonical, sign_canonical, signing_key
from donegate.harness.spec import CheckSpec, TaskSpec
from donegate.records.certificate import (
    KIND,
    READABLE_VERSIONS,
    VERSION,
    Certificate,
    CertificateCheck,
    ChecklistEntry,
    Closure,
    EvidenceData,
    EvidenceEntry,
    EvidenceSection,
    ProtectedSection,
    Review,
    Times,
    TranscriptSection,
    read_certificate,
    refer_outputs,
)
from donegate.records.check import CheckResult
from donegate.records.evidence import digest_text, transcript_digest
from donegate.sandbox import resolve

__all__ = [
    "approve_certificate",
    "build_certificate",
    "certificate_digest",
    "closure_data",
    "load_certificate",
    "verify_certificate",
    "write_certificate",
]


def _iso(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, tz=dt.UTC).isoformat(timespec="seconds")


def certificate_digest(cert: Mapping[str, Any]) -> str:
    """SHA-256 of the certificate's canonical JSON without its ``digest`` and ``signature``."""
    body = {k: v for k, v in cert.items() if k not in ("digest", "signature")}
    return digest_text(canonical(body).decode())


def closure_data(
    mode: Literal["checks", "human", "model"], checks: int, review: Review | None
) -> Closure:
    """The ``closure`` section: who closed the task, and whether checks backed it."""
    if mode == "human" and review is None:
        statement = "awaiting a person's approval: not done until approved"
    elif mode == "human":
        assert review is not None
        statement = f"approved by {review.approved_by} at {review.approved_at}"
    elif checks:
        statement = f"every acceptance check ({checks}) passed at the accepted claim"
    else:
        statement = (
            "no mechanical check backed this completion: it rests on the agent's claim, "
            "its checklist and the verifier, if any"
        )
    if mode == "human" and not checks:
        statement += "; no mechanical check backed it"
    return Closure(mode=mode, backed_by_checks=checks > 0, statement=statement, review=review)


def build_certificate(
    *,
    spec: TaskSpec,
    workdir: Path,
    checks: Sequence[CheckResult],
    evidence: Evidence,
    transcript: Sequence[Any],
    models: Mapping[str, str | None],
    started_at: float,
    finished_at: float,
    continuations: int,
    model_calls: int,
    checklist: Sequence[Mapping[str, Any]] = (),
    protected: Manifest | None = None,
    agent: Mapping[str, Any] | None = None,
    agent_transcript: Mapping[str, Any] | None = None,
    resolved: bool = False,
    host: Mapping[str, Any] | None = None,
    spend: Mapping[str, Any] | None = None,
    task_file: str | Path | None = None,
) -> Certificate:
    """The certificate, evidence and transcript embedded (`write_certificate` signs it).

    Each tool output is stored once: a transcript message answering a call with the output an
    evidence record holds refers to that record's ``output_digest``. A ``closure: human``
    task's certificate says ``awaiting_review`` until `approve_certificate`. `resolved` says
    `workdir` is resolved already (the runner resolved it preparing the task; resolving a path
    again costs a system call per component). `host` names the framework a gate ran inside.
    `task_file`, the file `spec` came from, is recorded with the check code, so ``verify`` with
    no flags can re-run ``python:`` checks.
    """
    specs = {c.name: c for c in spec.checks}
    records = evidence.records
    passed = [c for c in checks if c.kind != "protect"]
    stored = refer_outputs(messages_to_json(transcript), (r.output_digest for r in records))
    extra = _optional_sections(spec, workdir, agent=agent, agent_transcript=agent_transcript,
                               host=host, spend=spend, task_file=task_file)  # fmt: skip
    return Certificate(
        kind=KIND,
        version=VERSION,
        status="awaiting_review" if spec.closure == "human" else "done",
        task_id=spec.id,
        completion_condition=spec.completion_condition,
        prompt_digest=digest_text(spec.prompt),
        workdir=str(workdir if resolved else Path(workdir).resolve()),
        closure=closure_data(spec.closure, len(passed), None),
        checks=tuple(
            CertificateCheck(
                name=c.name,
                kind=c.kind,
                spec=specs[c.name].model_dump(mode="json", by_alias=True)
                if c.name in specs
                else None,
                command=c.command,
                exit_code=c.exit_code,
                passed=c.passed,
                detail=c.detail,
                output_digest=c.output_digest,
            )
            for c in passed
        ),
        protected=ProtectedSection.model_validate(
            (protected or Manifest(root=Path(workdir))).as_data()
        ),
        evidence=EvidenceSection(
            count=len(records),
            digest=evidence.digest(),
            records=tuple(
                EvidenceEntry(
                    index=r.index,
                    step=r.step,
                    tool=r.tool,
                    idempotency_key=r.idempotency_key,
                    output_digest=r.output_digest,
                    digest=r.digest,
                )
                for r in records
            ),
            data=tuple(EvidenceData.model_validate(r.as_data()) for r in records),
        ),
        transcript=TranscriptSection(
            messages=len(stored),
            digest=transcript_digest(stored, as_json=True),
            data=tuple(stored),
        ),
        checklist=tuple(ChecklistEntry.model_validate(dict(i)) for i in checklist),
        models=dict(models),
        times=Times(
            started=_iso(started_at),
            finished=_iso(finished_at),
            duration_s=round(finished_at - started_at, 3),
        ),
        continuations=continuations,
        model_calls=model_calls,
        **extra,
    )


def _optional_sections(
    spec: TaskSpec,
    workdir: Path,
    *,
    agent: Mapping[str, Any] | None,
    agent_transcript: Mapping[str, Any] | None,
    host: Mapping[str, Any] | None,
    spend: Mapping[str, Any] | None,
    task_file: str | Path | None,
) -> dict[str, Any]:
    """The sections a certificate carries only when they apply (and where the checks ran)."""
    extra: dict[str, Any] = {"isolation": resolve().as_data()}
    sections = {"agent": agent, "agent_transcript": agent_transcript, "host": host}
    extra.update({name: dict(value) for name, value in sections.items() if value is not None})
    if spend is not None and spend.get("calls"):
        extra["spend"] = dict(spend)
    extra.update(recorded_sources(spec, Path(workdir), task_file))
    return extra


def write_certificate(cert: Certificate, directory: Path) -> Path:
    """Digest, sign and write the certificate (compact JSON, one file); its path.

    One file, not three: a worker writes one per task, and file creation dominates its cost.
    """
    body = {k: v for k, v in cert.as_data().items() if k not in ("digest", "signature")}
    body["key_id"] = signing_key(create=True).public.key_id  # signed: which key vouches
    # Each top-level value is serialized once, in canonical form: the digest, the signature and
    # the file are all joined from these texts (the digest and the HMAC cover sorted keys; the
    # file keeps the certificate's field order at the top, which is the same JSON value).
    texts = {k: _canonical_text(v) for k, v in body.items()}
    texts["digest"] = _canonical_text(digest_text(_joined(texts, sorted(texts))))
    texts["signature"] = _canonical_text(sign_canonical(_joined(texts, sorted(texts)).encode()))
    directory.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(tz=dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    stem = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in cert.task_id)
    path = directory / f"{stem}-{stamp}.certificate.json"
    data = (_joined(texts, texts) + "\n").encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)  # as `open(path, "w")`
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    except OSError as exc:  # a full disk, say: no half file left, and the error names the file
        path.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    return path


_canonical_text = canonical_json


def _joined(texts: Mapping[str, str], keys: Iterable[str]) -> str:
    """A JSON object of values serialized already, keys in the order given."""
    return "{" + ",".join(f"{_key_text(k)}:{texts[k]}" for k in keys) + "}"


@functools.lru_cache(maxsize=64)
def _key_text(key: str) -> str:
    return canonical_json(key)


def load_certificate(path: str | Path) -> Certificate:
    """A certificate file as a typed `Certificate`, unverified (`UserError` when it is not
    one of a version this harness reads)."""
    data = read_certificate(path)
    if data.get("version") not in READABLE_VERSIONS:
        raise UserError(f"{path}: certificate version {str(data.get('version'))[:20]} is unread")
    try:
        return Certificate.from_data(data)
    except pydantic.ValidationError as exc:
        raise UserError(f"{path}: malformed certificate: {_first_error(exc)}") from None


def _first_error(exc: pydantic.ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"]) or "(certificate)"
    return f"{where}: {error['msg']}"


def verify_certificate(
    path: str | Path,
    *,
    workdir: str | Path | None = None,
    rerun: bool = True,
    strict_output: bool = False,
    timeout: float = 120.0,
    task: TaskSpec | None = None,
    trusted: Sequence[PublicKey] | None = None,
) -> tuple[bool, list[str]]:
    """Prove a certificate: signature, digests, then (`rerun`) its checks again; ``(ok, problems)``.

    Nothing runs unless the signature and every digest hold. The checks re-run are the
    certified ones (``python:`` ones importing from the certified ``check_path``, once the
    recorded task file and check modules are found unchanged), or `task`'s once they are shown
    equal to them. A check must pass again with the same exit code; its output digest is
    compared only with `strict_output` (test output carries timings). A certificate still
    awaiting review is not done. Raises `UserError` when `path` is not a readable certificate
    or there is no key to check it with, `CheckEnvironmentError` when a check cannot run here.
    `trusted`: the public keys to accept (default `donegate.harness.signing.trusted_keys`).
    """
    cert, problems = prove(read_certificate(path), trusted=trusted)
    if cert is None or problems:
        return False, problems
    if cert.status != "done":
        return False, [f"status: {cert.status}, not done"]
    if not rerun:
        return True, []
    root = Path(workdir) if workdir is not None else Path(cert.workdir)
    if not root.is_dir():
        return False, [f"checks: the workdir {root} does not exist"]
    specs, problems = specs_to_rerun(cert, task)
    if task is None:  # the certified checks, from where the certificate says their code is
        specs = bind_check_path(cert, specs)
        problems += source_problems(cert)
    if problems:
        return False, problems
    problems += _protected_now(cert, root.resolve(), specs)
    try:
        problems += rerun_checks(cert, specs, root, strict_output=strict_output, timeout=timeout)
    except UserError as exc:  # not the certificate's fault, nor the caller's: this machine's
        raise CheckEnvironmentError(str(exc)) from None
    return not problems, problems


def approve_certificate(
    path: str | Path,
    *,
    by: str,
    note: str | None = None,
    at: float | None = None,
    channel: Literal["ui", "api", "cli"] | None = None,
    os_user: str | None = None,
) -> Path:
    """A person's approval of a certificate awaiting review: a new signed, ``done`` certificate.

    The approved one carries who, when, the note, the channel and the OS user in
    ``closure.review``, and the digest of the certificate it approves; it is written beside it.
    `UserError` when `path` does not verify or is not awaiting review. Checking that `by` is a
    reviewer is the caller's (`donegate.review`): the harness does not know the store.
    """
    if not by.strip():
        raise UserError("approval needs a name (--by)")
    file = Path(path)
    cert, problems = prove(read_certificate(file))
    if cert is None or problems:
        raise UserError(f"{file}: cannot approve: {problems[0]}")
    if cert.status != "awaiting_review":
        raise UserError(f"{file}: cannot approve: it is {cert.status}, not awaiting review")
    when = at if at is not None else dt.datetime.now(tz=dt.UTC).timestamp()
    said: dict[str, Any] = {"channel": channel, "os_user": os_user}
    review = Review(
        approved_by=by.strip(),
        approved_at=_iso(when),
        note=note,
        reviewed_certificate=cert.digest,
        **{k: v for k, v in said.items() if v is not None},  # unset: old approvals unchanged
    )
    closure = closure_data("human", len(cert.checks), review)
    approved = cert.model_copy(update={"status": "done", "closure": closure})
    return write_certificate(approved, file.parent)


def _protected_now(cert: Certificate, root: Path, specs: Sequence[CheckSpec]) -> list[str]:
    try:
        manifest = Manifest.from_data(cert.protected.model_dump(mode="json"), root)
        problems = [f"{c.text} since certification" for c in manifest.changes()]
    except (ValueError, UserError) as exc:
        return [f"protected files: {exc}"]
    # judged as at the claim: the scan's flags were the verifier's to weigh when there was one
    review = review_changes(manifest, specs)
    return problems + review.problems(verifier=bool(cert.models.get("verifier")))
