"""Completion certificates: what a finished task was checked against, bound by digests.

A certificate is a JSON file written when a task is done. It binds the task id and completion
condition to each acceptance check (its spec, what ran, exit code, output digest), the digests of
the evidence the harness recorded and of the transcript (both kept beside it as sidecar files),
the models and the times; its own ``digest`` covers all of it. `verify_certificate` confirms
every digest and re-runs the checks, so "done" can be re-proven later rather than remembered.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pydantic

from donegate.errors import UserError
from donegate.harness.checks import CheckResult, run_check
from donegate.harness.evidence import (
    Evidence,
    digest_text,
    plain_data,
    record_digest,
    transcript_digest,
)
from donegate.harness.spec import CheckSpec, TaskSpec

__all__ = ["build_certificate", "certificate_digest", "verify_certificate", "write_certificate"]

KIND = "donegate.certificate"
_CHECK_ADAPTER: pydantic.TypeAdapter[CheckSpec] = pydantic.TypeAdapter(CheckSpec)


def _iso(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, tz=dt.UTC).isoformat(timespec="seconds")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def certificate_digest(cert: Mapping[str, Any]) -> str:
    """SHA-256 of the certificate's canonical JSON without its ``digest`` field."""
    return digest_text(_canonical({k: v for k, v in cert.items() if k != "digest"}))


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
) -> dict[str, Any]:
    """The certificate body (without sidecar file names; `write_certificate` adds them)."""
    specs = {c.name: c for c in spec.checks}
    records = evidence.records
    cert: dict[str, Any] = {
        "kind": KIND,
        "version": 1,
        "task_id": spec.id,
        "completion_condition": spec.completion_condition,
        "prompt_digest": digest_text(spec.prompt),
        "workdir": str(Path(workdir).resolve()),
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
            for c in checks
        ],
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
    return cert


def write_certificate(
    cert: Mapping[str, Any],
    directory: Path,
    *,
    evidence: Evidence,
    transcript: Sequence[Any],
) -> Path:
    """Write the certificate, evidence and transcript embedded, as one file; return its path.

    One file, not three: a worker writes one per task, and file creation dominates its cost.
    """
    directory.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(tz=dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    stem = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in cert["task_id"])
    path = directory / f"{stem}-{stamp}.certificate.json"
    body = dict(cert)
    body["evidence"] = {**cert["evidence"], "data": [r.as_data() for r in evidence.records]}
    body["transcript"] = {**cert["transcript"], "data": plain_data(list(transcript))}
    body["digest"] = certificate_digest(body)
    path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def verify_certificate(
    path: str | Path,
    *,
    workdir: str | Path | None = None,
    rerun: bool = True,
    strict_output: bool = False,
    timeout: float = 120.0,
) -> tuple[bool, list[str]]:
    """Confirm a certificate's digests and re-run its checks; ``(ok, problems)``.

    A check must pass again with the same exit code. Its output digest is compared only with
    `strict_output` (test output usually carries timings). Raises `UserError` when `path` is
    not a readable certificate.
    """
    file = Path(path)
    cert = _load(file)
    problems: list[str] = []
    if cert.get("digest") != certificate_digest(cert):
        problems.append("certificate digest mismatch: the file was changed after it was written")
    problems += _verify_evidence(file, cert)
    problems += _verify_transcript(file, cert)
    if rerun:
        root = Path(workdir) if workdir is not None else Path(cert.get("workdir", "."))
        problems += _rerun(cert, root, strict_output=strict_output, timeout=timeout)
    return not problems, problems


def _load(file: Path) -> dict[str, Any]:
    try:
        cert = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"{file}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
        raise UserError(f"{file}: not valid JSON: {exc}") from None
    if not isinstance(cert, dict) or cert.get("kind") != KIND:
        raise UserError(f"{file}: not a donegate certificate")
    return cert


def _sidecar(file: Path, section: Any, what: str) -> tuple[Any, str | None]:
    """The embedded data of a section, or (older certificates) its sidecar file's."""
    if isinstance(section, dict) and "data" in section:
        return section["data"], None
    name = section.get("file") if isinstance(section, dict) else None
    if not isinstance(name, str):
        return None, f"{what}: the certificate names no {what} file"
    try:
        return json.loads((file.parent / name).read_text(encoding="utf-8")), None
    except (OSError, ValueError) as exc:
        return None, f"{what}: cannot read {name}: {exc}"


def _verify_evidence(file: Path, cert: Mapping[str, Any]) -> list[str]:
    section = cert.get("evidence")
    records, problem = _sidecar(file, section, "evidence")
    if problem is not None:
        return [problem]
    assert isinstance(section, dict)
    if not isinstance(records, list):
        return ["evidence: the evidence file is not a list of records"]
    problems = []
    digests = []
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
        listed = section.get("records", [])
        if i >= len(listed) or listed[i].get("digest") != digest:
            problems.append(f"evidence: record {i} ({r.get('tool')}) does not match its digest")
    if len(records) != section.get("count"):
        problems.append(
            f"evidence: {len(records)} records, certificate says {section.get('count')}"
        )
    if digest_text("\n".join(digests)) != section.get("digest"):
        problems.append("evidence: the evidence digest does not match")
    return problems


def _verify_transcript(file: Path, cert: Mapping[str, Any]) -> list[str]:
    section = cert.get("transcript")
    messages, problem = _sidecar(file, section, "transcript")
    if problem is not None:
        return [problem]
    assert isinstance(section, dict)
    if not isinstance(messages, list) or transcript_digest(messages) != section.get("digest"):
        return ["transcript: the transcript digest does not match"]
    return []


def _rerun(
    cert: Mapping[str, Any], root: Path, *, strict_output: bool, timeout: float
) -> list[str]:
    if not root.is_dir():
        return [f"checks: the workdir {root} does not exist"]
    problems = []
    for entry in cert.get("checks", []):
        name = entry.get("name", "?")
        if entry.get("spec") is None:
            problems.append(f"{name}: no check spec recorded; cannot re-run")
            continue
        try:
            spec = _CHECK_ADAPTER.validate_python(entry["spec"])
        except pydantic.ValidationError as exc:
            problems.append(f"{name}: the recorded check spec is invalid: {exc.errors()[0]['msg']}")
            continue
        result = run_check(spec, workdir=root, timeout=timeout)
        if not result.passed:
            problems.append(f"{name}: fails now ({result.detail})")
        elif result.exit_code != entry.get("exit_code"):
            problems.append(f"{name}: exit code {result.exit_code}, certified {entry['exit_code']}")
        elif strict_output and result.output_digest != entry.get("output_digest"):
            problems.append(f"{name}: output differs from the certified output")
    return problems
