"""Proving a certificate's JSON: signature, then digests, then what a re-run compares.

Signature and digests are checked over the JSON exactly as read (what the HMAC covers); only a
body that passes them is parsed into a typed `Certificate`, and a body that does not parse
fails closed (a problem, nothing run). `donegate.harness.certificate.verify_certificate` is the
entry point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pydantic

from donegate.harness.checks import run_checks
from donegate.harness.protect import Manifest
from donegate.harness.signing import PublicKey, canonical, signature_problem
from donegate.harness.spec import CheckSpec, TaskSpec
from donegate.records.certificate import (
    READABLE_VERSIONS,
    Certificate,
    transcript_references,
)
from donegate.records.evidence import digest_text, record_digest, transcript_digest

__all__ = ["prove", "rerun_checks", "specs_to_rerun"]

_CHECK_ADAPTER: pydantic.TypeAdapter[CheckSpec] = pydantic.TypeAdapter(CheckSpec)


def prove(
    raw: Mapping[str, Any], *, trusted: Sequence[PublicKey] | None = None
) -> tuple[Certificate | None, list[str]]:
    """The typed certificate and the problems found; nothing else may be read from a
    certificate with problems (or None)."""
    version = raw.get("version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        shown = version if isinstance(version, int) else repr(str(version)[:20])
        if isinstance(version, int) and version > max(READABLE_VERSIONS):
            return None, [f"version: {version} is newer than this harness reads"]
        return None, [
            f"version: {shown} is not 2; "
            "unsigned certificates from before version 2 cannot be verified"
        ]
    problem = signature_problem(raw, trusted=trusted)
    if problem is not None:
        return None, [problem]
    sig = raw.get("signature")
    if "key_id" in raw and isinstance(sig, dict) and raw["key_id"] != sig.get("key_id"):
        return None, ["key_id: differs from the signature's key id"]
    body = {k: v for k, v in raw.items() if k not in ("digest", "signature")}
    if raw.get("digest") != digest_text(canonical(body).decode()):
        return None, ["certificate digest mismatch: the file was changed after it was written"]
    try:
        cert = Certificate.from_data(raw)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "(certificate)"
        return None, [f"certificate: malformed at {where}: {error['msg']}"]
    problems = _verify_evidence(cert) + _verify_transcript(cert)
    return cert, problems


def _verify_evidence(cert: Certificate) -> list[str]:
    section = cert.evidence
    if section.data is None:
        return ["evidence: the certificate embeds no list of evidence records"]
    problems = []
    digests = []
    for i, r in enumerate(section.data):
        digest = record_digest(
            tool=r.tool,
            arguments_raw=r.arguments_raw,
            output=r.output,
            is_error=r.is_error,
            executed=r.executed,
            idempotency_key=r.idempotency_key,
        )
        digests.append(digest)
        if i >= len(section.records) or section.records[i].digest != digest:
            problems.append(f"evidence: record {i} ({r.tool}) does not match its digest")
    if len(section.data) != section.count:
        problems.append(f"evidence: {len(section.data)} records, certificate says {section.count}")
    if digest_text("\n".join(digests)) != section.digest:
        problems.append("evidence: the evidence digest does not match")
    return problems


def _verify_transcript(cert: Certificate) -> list[str]:
    messages = cert.transcript.data
    if messages is None:
        return ["transcript: the certificate embeds no transcript"]
    if transcript_digest(list(messages)) != cert.transcript.digest:
        return ["transcript: the transcript digest does not match"]
    known = {r.output_digest for r in cert.evidence.data or ()}
    missing = [d for d in transcript_references(messages) if d not in known]
    if missing:
        return [f"transcript: refers to output {missing[0][:16]}... that no evidence record holds"]
    return []


def specs_to_rerun(cert: Certificate, task: TaskSpec | None) -> tuple[list[CheckSpec], list[str]]:
    """The checks to run again: the certified ones, or `task`'s once shown equal to them."""
    if task is not None:
        mine = [c.model_dump(mode="json", by_alias=True) for c in task.checks]
        if mine != [e.spec for e in cert.checks]:
            return [], [f"checks: the task {task.id}'s checks differ from the certified ones"]
        return list(task.checks), []
    specs, problems = [], []
    for entry in cert.checks:
        if entry.spec is None:
            problems.append(f"{entry.name}: no check spec recorded; cannot re-run")
            continue
        try:
            specs.append(_CHECK_ADAPTER.validate_python(entry.spec))
        except pydantic.ValidationError as exc:
            problems.append(
                f"{entry.name}: the recorded check spec is invalid: {exc.errors()[0]['msg']}"
            )
    return specs, problems


def rerun_checks(
    cert: Certificate,
    specs: Sequence[CheckSpec],
    root: Path,
    *,
    strict_output: bool,
    timeout: float,
) -> list[str]:
    """What differs when the checks run again (independent ``run:`` checks concurrently)."""
    certified = {e.name: e for e in cert.checks}
    problems = []
    ran = run_checks(specs, root, timeout=timeout, snapshot_of=_snapshot(cert, root))
    for spec, result in zip(specs, ran, strict=True):
        entry = certified.get(spec.name)
        exit_code = entry.exit_code if entry is not None else None
        if not result.passed:
            problems.append(f"{spec.name}: fails now ({result.detail})")
        elif result.exit_code != exit_code:
            problems.append(f"{spec.name}: exit code {result.exit_code}, certified {exit_code}")
        elif strict_output and (entry is None or result.output_digest != entry.output_digest):
            problems.append(f"{spec.name}: output differs from the certified output")
    return problems


def _snapshot(cert: Certificate, root: Path) -> Manifest | None:
    """The certified protected files, written over the clean room before the checks re-run."""
    try:
        return Manifest.from_data(cert.protected.model_dump(mode="json"), Path(root).resolve())
    except ValueError:  # unusable digests: verify names them (certificate._protected_now)
        return None
