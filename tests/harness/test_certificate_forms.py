"""The certificate's typed form and its versions: version 3 (compact, each tool output stored
once) written and proven, version 2 (outputs embedded twice) still read and proven; the
escalation report's typed round trip."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

import pydantic
import pytest

from donegate.harness.certificate import certificate_digest, load_certificate, verify_certificate
from donegate.harness.runner import TaskResult, run_task
from donegate.harness.signing import sign
from donegate.harness.spec import TaskSpec
from donegate.records.certificate import Certificate
from donegate.records.evidence import EVIDENCE_OUTPUT_CAP, transcript_digest
from donegate.records.report import EscalationReport
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script

V2 = Path(__file__).with_name("data") / "certificate-v2.json"
V2_KEY = "the fixture key of a version 2 certificate"  # what signed the fixture


def reading(root: Path, sizes: list[int], *, escalate: bool = False) -> TaskResult:
    """A task reading one file per turn, each of the given size, each different."""
    rnd = random.Random(7)
    for i, size in enumerate(sizes):
        text = "".join(rnd.choice(string.ascii_letters + " \n") for _ in range(size))
        (root / f"f{i}.txt").write_text(text)
    spec = TaskSpec.model_validate(
        {"id": "read", "prompt": "Read them.", "tools": ["read_file"],
         "max_read_bytes": max(4096, 2 * max(sizes)), "max_continuations": 0,
         "checks": [{"file_exists": "never.txt" if escalate else "f0.txt"}]}
    )  # fmt: skip
    turns: list[dict[str, Any]] = [
        {"tool_call": "read_file", "args": {"path": f"f{i}.txt"}} for i in range(len(sizes))
    ]
    model = ScriptedModel(
        parse_script({"prompt": "p", "turns": [*turns, {"text": "Read them all."}]}, source="t"),
        name="script:worker",
    )
    return run_task(spec, model=model, workdir=root, completion_tool=None)


def test_each_output_is_stored_once(tmp_path: Path) -> None:
    sizes = [50_000] * 10  # under the evidence cap: every output whole, once
    result = reading(tmp_path, sizes)
    assert result.status == "done" and result.certificate is not None
    raw = result.certificate.read_bytes()
    total = sum(len((tmp_path / f"f{i}.txt").read_bytes()) for i in range(10))
    assert total <= len(raw) <= 1.15 * total  # ~1x the outputs (it was over 2x)
    assert b'\n "' not in raw and b'": ' not in raw  # compact, no indent
    head = (tmp_path / "f3.txt").read_text()[:200]
    assert raw.count(json.dumps(head)[1:-1].encode()) == 1  # in the evidence, not again
    cert = json.loads(raw)
    assert cert["version"] == 3
    tool_parts = [
        p for m in cert["transcript"]["data"] for p in m["parts"] if p["kind"] == "tool_result"
    ]
    assert len(tool_parts) == 10 and all("content" not in p for p in tool_parts)
    assert [p["output_digest"] for p in tool_parts] == [
        r["output_digest"] for r in cert["evidence"]["data"]
    ]
    assert verify_certificate(result.certificate) == (True, [])


def test_large_outputs_stay_bounded_by_the_evidence_cap(tmp_path: Path) -> None:
    result = reading(tmp_path, [1_000_000] * 10)  # 10 turns x 1 MB: once wrote 10.9 MB
    assert result.status == "done" and result.certificate is not None
    size = result.certificate.stat().st_size
    assert size <= 10 * (EVIDENCE_OUTPUT_CAP + 4096)  # each output once, cut to head and tail
    assert size < 1_000_000  # under one output's size
    assert verify_certificate(result.certificate) == (True, [])


def test_a_dangling_output_reference_fails_closed(tmp_path: Path) -> None:
    result = reading(tmp_path, [2000, 2000])
    assert result.certificate is not None
    cert = json.loads(result.certificate.read_text())
    refs = [p for m in cert["transcript"]["data"] for p in m["parts"] if "output_digest" in p]
    assert len(refs) == 2
    cert["evidence"]["data"][1]["output_digest"] = "0" * 64  # and re-signed by the key holder
    cert["digest"] = certificate_digest(cert)
    cert["signature"] = sign(cert)
    result.certificate.write_text(json.dumps(cert))
    ok, problems = verify_certificate(result.certificate, rerun=False)
    assert not ok and problems == [
        "transcript: refers to output "
        f"{refs[1]['output_digest'][:16]}... "
        "that no evidence record holds"
    ]


def test_the_typed_certificate_round_trips_and_is_frozen(tmp_path: Path) -> None:
    result = reading(tmp_path, [3000, 10])
    assert result.certificate is not None
    raw = json.loads(result.certificate.read_text())
    cert = load_certificate(result.certificate)
    assert cert.as_data() == raw
    assert Certificate.from_data(cert.as_data()) == cert
    assert (cert.version, cert.status, cert.evidence.count) == (3, "done", 2)
    assert cert.checks[0].name == "file_exists: f0.txt" and cert.checks[0].passed
    assert cert.signature is not None and cert.signature.alg == "Ed25519"
    # the outputs the transcript refers to resolve to the run's own transcript
    assert transcript_digest(cert.transcript_messages()) == transcript_digest(result.run.transcript)
    with pytest.raises(pydantic.ValidationError):
        cert.status = "awaiting_review"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):  # unknown keys are refused, not kept
        Certificate.from_data({**raw, "extra": 1})


def test_a_version_2_certificate_still_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", V2_KEY)
    (tmp_path / "out.txt").write_text("hello")
    path = tmp_path / "old.certificate.json"
    path.write_bytes(V2.read_bytes())
    raw = json.loads(path.read_text())
    assert raw["version"] == 2
    assert verify_certificate(path, workdir=tmp_path) == (True, [])
    cert = load_certificate(path)
    assert cert.version == 2 and cert.as_data() == raw
    assert cert.transcript.data is not None and cert.transcript_messages() == list(
        cert.transcript.data
    )  # version 2 embeds every output in the transcript: nothing to resolve
    (tmp_path / "out.txt").unlink()
    ok, problems = verify_certificate(path, workdir=tmp_path)
    assert not ok and problems == ["file_exists: out.txt: fails now (out.txt does not exist)"]
    raw["transcript"]["data"][2]["parts"][0]["content"] = "wrote 0 bytes"
    path.write_text(json.dumps(raw))
    assert verify_certificate(path, rerun=False) == (
        False, ["signature: does not match; the certificate was changed or forged"]
    )  # fmt: skip
    raw["digest"] = certificate_digest(raw)
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", "ed25519:" + "ab" * 32)  # an old secret signs none
    raw["signature"] = sign(raw)
    path.write_text(json.dumps(raw))
    assert verify_certificate(path, rerun=False) == (
        False, ["transcript: the transcript digest does not match"]
    )  # fmt: skip


def test_the_typed_report_round_trips(tmp_path: Path) -> None:
    result = reading(tmp_path, [100, 100], escalate=True)
    report = result.escalation
    assert result.status == "escalated" and report is not None and report.files is not None
    written = json.loads(Path(report.files.json_path).read_text())
    assert written == {k: v for k, v in report.as_data().items() if k != "files"}
    again = EscalationReport.from_data(written)
    assert again.as_data() == written and again.left == report.left
    assert [c.name for c in again.left.failed_checks] == ["file_exists: never.txt"]
    assert [a.tool for a in again.attempted] == ["read_file", "read_file"]
    with pytest.raises(pydantic.ValidationError):
        again.reason = "edited"  # type: ignore[misc]
    short = {"task_id": "t", "reason": "its workers were lost 5 times", "attempts": 5}
    assert EscalationReport.from_data(short).as_data() == short  # no key added
