"""Completion certificates: what a finished task was checked against, signed by the harness.

A certificate is one JSON file written under donegate's data directory (never the agent's
workdir) when a task is done, or awaits a person's review. It binds the task id, completion
condition and closure to each acceptance check (its spec, what ran, exit code, output digest),
the digests of the protected files at the start, the evidence the harness recorded and the
transcript (both embedded), the models and the times. ``digest`` is the SHA-256 of it all and
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
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pydantic

from donegate.codec import messages_to_json
from donegate.errors import UserError
from donegate.harness.checks import CheckResult, run_check
from donegate.harness.evidence import (
    Evidence,
    digest_text,
    record_digest,
    transcript_digest,
)
from donegate.harness.protect import Manifest
from donegate.harness.signing import canonical, sign, signature_problem
from donegate.harness.spec import CheckSpec, TaskSpec

__all__ = [
    "KIND",
    "MAX_CERTIFICATE_BYTES",
    "VERSION",
    "approve_certificate",
    "build_certificate",
    "certificate_digest",
    "closure_data",
    "load_certificate",
    "verify_certificate",
    "write_certificate",
]

KIND = "donegate.certificate"
VERSION = 2
"""2: signed, with closure, status and protected files (1 was unsigned and cannot verify)."""
MAX_CERTIFICATE_BYTES = 64 * 1024 * 1024
"""A larger file is refused unread: a certificate is input like any other."""
_CHECK_ADAPTER: pydantic.TypeAdapter[CheckSpec] = pydantic.TypeAdapter(CheckSpec)


def _iso(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, tz=dt.UTC).isoformat(timespec="seconds")


def certificate_digest(cert: Mapping[str, Any]) -> str:
    """SHA-256 of the certificate's canonical JSON without its ``digest`` and ``signature``."""
    body = {k: v for k, v in cert.items() if k not in ("digest", "signature")}
    return digest_text(canonical(body).decode())


def closure_data(
    mode: Literal["checks", "human", "model"], checks: int, review: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The ``closure`` section: who closed the task, and whether checks backed it."""
    if mode == "human" and review is None:
        statement = "awaiting a person's approval: not done until approved"
    elif mode == "human":
        assert review is not None
        statement = f"approved by {review['approved_by']} at {review['approved_at']}"
    elif checks:
        statement = f"every acceptance check ({checks}) passed at the accepted claim"
    else:
        statement = (
            "no mechanical check backed this completion: it rests on the agent's claim, "
            "its checklist and the verifier, if any"
        )
    if mode == "human" and not checks:
        statement += "; no mechanical check backed it"
    return {
        "mode": mode,
        "backed_by_checks": checks > 0,
        "statement": statement,
        "review": dict(review) if review is not None else None,
    }


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
) -> dict[str, Any]:
    """The certificate body (`write_certificate` embeds the data, digests and signs it).

    A ``closure: human`` task's certificate says ``awaiting_review`` until `approve_certificate`.
    """
    specs = {c.name: c for c in spec.checks}
    records = evidence.records
    passed = [c for c in checks if c.kind != "protect"]
    return {
        "kind": KIND,
        "version": VERSION,
        "status": "awaiting_review" if spec.closure == "human" else "done",
        "task_id": spec.id,
        "completion_condition": spec.completion_condition,
        "prompt_digest": digest_text(spec.prompt),
        "workdir": str(Path(workdir).resolve()),
        "closure": closure_data(spec.closure, len(passed), None),
        "checks": [
            {
                "name": c.name,
                "kind": c.kind,
                "spec": specs[c.name].model_dump(mode="json", by_alias=True)
                if c.name in specs
                else None,
                "command": c.command,
                "exit_code": c.exit_code,
                "passed": c.passed,
                "detail": c.detail,
                "output_digest": c.output_digest,
            }
            for c in passed
        ],
        "protected": (protected or Manifest(root=Path(workdir))).as_data(),
        "evidence": {
            "count": len(records),
            "digest": evidence.digest(),
            "records": [
                {
                    "index": r.index,
                    "step": r.step,
                    "tool": r.tool,
                    "idempotency_key": r.idempotency_key,
                    "output_digest": r.output_digest,
                    "digest": r.digest,
                }
                for r in records
            ],
        },
        "transcript": {"messages": len(transcript), "digest": transcript_digest(transcript)},
        "checklist": [dict(i) for i in checklist],
        "models": dict(models),
        "times": {
            "started": _iso(started_at),
            "finished": _iso(finished_at),
            "duration_s": round(finished_at - started_at, 3),
        },
        "continuations": continuations,
        "model_calls": model_calls,
    }


def write_certificate(
    cert: Mapping[str, Any],
    directory: Path,
    *,
    evidence: Evidence,
    transcript: Sequence[Any],
) -> Path:
    """Embed the evidence and transcript, digest, sign and write the certificate; its path.

    One file, not three: a worker writes one per task, and file creation dominates its cost.
    """
    body = dict(cert)
    body["evidence"] = {**cert["evidence"], "data": [r.as_data() for r in evidence.records]}
    body["transcript"] = {**cert["transcript"], "data": messages_to_json(transcript)}
    return _write_signed(body, directory)


def _write_signed(body: dict[str, Any], directory: Path) -> Path:
    body = {k: v for k, v in body.items() if k not in ("digest", "signature")}
    body["digest"] = certificate_digest(body)
    body["signature"] = sign(body)
    directory.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(tz=dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    stem = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in body["task_id"])
    path = directory / f"{stem}-{stamp}.certificate.json"
    path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def load_certificate(path: str | Path) -> dict[str, Any]:
    """A certificate file's JSON, unverified (`UserError` when it is not one)."""
    file = Path(path)
    try:
        with file.open("rb") as f:
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


def _proven(cert: Mapping[str, Any]) -> list[str]:
    """Signature, then digests: nothing else may be read from a certificate failing these."""
    version = cert.get("version")
    if version != VERSION:
        shown = version if isinstance(version, int) else repr(str(version)[:20])
        return [
            f"version: {shown} is not {VERSION}; "
            "unsigned certificates from before version 2 cannot be verified"
        ]
    problem = signature_problem(cert)
    if problem is not None:
        return [problem]
    problems = []
    if cert.get("digest") != certificate_digest(cert):
        problems.append("certificate digest mismatch: the file was changed after it was written")
    return problems + _verify_evidence(cert) + _verify_transcript(cert)


def verify_certificate(
    path: str | Path,
    *,
    workdir: str | Path | None = None,
    rerun: bool = True,
    strict_output: bool = False,
    timeout: float = 120.0,
    task: TaskSpec | None = None,
) -> tuple[bool, list[str]]:
    """Prove a certificate: signature, digests, then (`rerun`) its checks again; ``(ok, problems)``.

    Nothing runs unless the signature and every digest hold. The checks re-run are the
    certified ones, or `task`'s once they are shown equal to them. A check must pass again with
    the same exit code; its output digest is compared only with `strict_output` (test output
    carries timings). A certificate still awaiting review is not done. Raises `UserError` when
    `path` is not a readable certificate or there is no key to check it with.
    """
    cert = load_certificate(path)
    problems = _proven(cert)
    if problems:
        return False, problems
    if cert.get("status") != "done":
        return False, [f"status: {str(cert.get('status'))[:40]}, not done"]
    if not rerun:
        return True, []
    root = Path(workdir) if workdir is not None else Path(str(cert.get("workdir", ".")))
    if not root.is_dir():
        return False, [f"checks: the workdir {root} does not exist"]
    specs, problems = _specs(cert, task)
    if problems:
        return False, problems
    problems += _protected_now(cert, root.resolve())
    problems += _rerun(cert, specs, root, strict_output=strict_output, timeout=timeout)
    return not problems, problems


def approve_certificate(
    path: str | Path, *, by: str, note: str | None = None, at: float | None = None
) -> Path:
    """A person's approval of a certificate awaiting review: a new signed, ``done`` certificate.

    The approved one carries who, when and the note in ``closure.review``, and the digest of
    the certificate it approves; it is written beside it. `UserError` when `path` does not
    verify or is not awaiting review.
    """
    if not by.strip():
        raise UserError("approval needs a name (--by)")
    file = Path(path)
    cert = load_certificate(file)
    problems = _proven(cert)
    if problems:
        raise UserError(f"{file}: cannot approve: {problems[0]}")
    if cert.get("status") != "awaiting_review":
        raise UserError(f"{file}: cannot approve: it is {cert.get('status')}, not awaiting review")
    when = at if at is not None else dt.datetime.now(tz=dt.UTC).timestamp()
    review = {
        "approved_by": by.strip(),
        "approved_at": _iso(when),
        "note": note,
        "reviewed_certificate": cert["digest"],
    }
    body = dict(cert)
    body["status"] = "done"
    body["closure"] = closure_data("human", len(cert.get("checks", [])), review)
    return _write_signed(body, file.parent)


def _specs(cert: Mapping[str, Any], task: TaskSpec | None) -> tuple[list[CheckSpec], list[str]]:
    entries = [e for e in cert.get("checks", []) if isinstance(e, dict)]
    if task is not None:
        mine = [c.model_dump(mode="json", by_alias=True) for c in task.checks]
        if mine != [e.get("spec") for e in entries]:
            return [], [f"checks: the task {task.id}'s checks differ from the certified ones"]
        return list(task.checks), []
    specs, problems = [], []
    for entry in entries:
        name = entry.get("name", "?")
        if entry.get("spec") is None:
            problems.append(f"{name}: no check spec recorded; cannot re-run")
            continue
        try:
            specs.append(_CHECK_ADAPTER.validate_python(entry["spec"]))
        except pydantic.ValidationError as exc:
            problems.append(f"{name}: the recorded check spec is invalid: {exc.errors()[0]['msg']}")
    return specs, problems


def _protected_now(cert: Mapping[str, Any], root: Path) -> list[str]:
    try:
        manifest = Manifest.from_data(cert.get("protected"), root)
        return [f"{c.text} since certification" for c in manifest.changes()]
    except (ValueError, UserError) as exc:
        return [f"protected files: {exc}"]


def _verify_evidence(cert: Mapping[str, Any]) -> list[str]:
    section = cert.get("evidence")
    records = section.get("data") if isinstance(section, dict) else None
    if not isinstance(section, dict) or not isinstance(records, list):
        return ["evidence: the certificate embeds no list of evidence records"]
    problems = []
    digests = []
    listed = section.get("records", [])
    for i, r in enumerate(records):
        try:
            digest = record_digest(
                tool=r["tool"],
                arguments_raw=r["arguments_raw"],
                output=r["output"],
                is_error=r["is_error"],
                executed=r["executed"],
                idempotency_key=r["idempotency_key"],
            )
        except (KeyError, TypeError):
            return [f"evidence: record {i} is malformed"]
        digests.append(digest)
        if not isinstance(listed, list) or i >= len(listed) or listed[i].get("digest") != digest:
            problems.append(f"evidence: record {i} ({r.get('tool')}) does not match its digest")
    if len(records) != section.get("count"):
        problems.append(
            f"evidence: {len(records)} records, certificate says {section.get('count')}"
        )
    if digest_text("\n".join(digests)) != section.get("digest"):
        problems.append("evidence: the evidence digest does not match")
    return problems


def _verify_transcript(cert: Mapping[str, Any]) -> list[str]:
    section = cert.get("transcript")
    messages = section.get("data") if isinstance(section, dict) else None
    if not isinstance(section, dict) or not isinstance(messages, list):
        return ["transcript: the certificate embeds no transcript"]
    if transcript_digest(messages) != section.get("digest"):
        return ["transcript: the transcript digest does not match"]
    return []


def _rerun(
    cert: Mapping[str, Any],
    specs: Sequence[CheckSpec],
    root: Path,
    *,
    strict_output: bool,
    timeout: float,
) -> list[str]:
    certified = {e.get("name"): e for e in cert.get("checks", []) if isinstance(e, dict)}
    problems = []
    for spec in specs:
        entry = certified.get(spec.name, {})
        result = run_check(spec, workdir=root, timeout=timeout)
        if not result.passed:
            problems.append(f"{spec.name}: fails now ({result.detail})")
        elif result.exit_code != entry.get("exit_code"):
            problems.append(
                f"{spec.name}: exit code {result.exit_code}, certified {entry.get('exit_code')}"
            )
        elif strict_output and result.output_digest != entry.get("output_digest"):
            problems.append(f"{spec.name}: output differs from the certified output")
    return problems
