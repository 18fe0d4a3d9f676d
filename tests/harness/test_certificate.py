"""Completion certificates: what they bind, and `verify_certificate` catching every change.

Forged, command-carrying and edited certificates as an attacker writes them are in
tests/harness/test_attack_proof.py; here the harness itself re-signs an edited certificate (as
one holding the key would), to show the digests inside still catch what changed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from donegate.errors import UserError
from donegate.harness.certificate import certificate_digest, verify_certificate
from donegate.harness.runner import TaskResult, run_task
from donegate.harness.signing import sign, signing_key
from donegate.harness.spec import TaskSpec
from donegate.records.certificate import Certificate
from donegate.records.evidence import digest_text, transcript_digest
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script

CHECK = [sys.executable, "-c", "import pathlib; print(pathlib.Path('out.txt').read_text())"]


def finished(root: Path) -> TaskResult:
    spec = TaskSpec.model_validate(
        {
            "id": "write-out",
            "prompt": "Write out.txt.",
            "completion_condition": "out.txt exists and prints",
            "checks": [{"run": CHECK, "name": "prints"}, {"file_exists": "out.txt"}],
            "tools": ["write_file"],
        }
    )
    script = {
        "prompt": "p",
        "tools": {"write_file": {"returns": "stub"}},
        "turns": [
            {"tool_call": "write_file", "args": {"path": "out.txt", "content": "hello"}},
            {"text": "Wrote out.txt."},
        ],
    }
    model = ScriptedModel(parse_script(script, source="t"), name="script:worker")
    result = run_task(spec, model=model, workdir=root, completion_tool=None)
    assert result.status == "done" and result.certificate is not None
    return result


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def resign(cert: dict[str, Any], *, digest: bool = True) -> None:
    """Sign `cert` again with the harness's key (and, with `digest`, fix its digest first)."""
    if digest:
        cert["digest"] = certificate_digest(cert)
    cert["signature"] = sign(cert)


def test_the_certificate_binds_task_checks_evidence_transcript_models_and_times(
    tmp_path: Path,
) -> None:
    result = finished(tmp_path)
    assert result.certificate is not None
    cert = load(result.certificate)
    assert (cert["kind"], cert["version"], cert["status"]) == ("donegate.certificate", 3, "done")
    assert cert["signature"]["alg"] == "Ed25519"
    assert cert["key_id"] == cert["signature"]["key_id"] == signing_key(create=False).public.key_id
    assert cert["closure"] == {
        "mode": "checks", "backed_by_checks": True, "review": None,
        "statement": "every acceptance check (2) passed at the accepted claim",
    }  # fmt: skip
    assert cert["task_id"] == "write-out"
    assert cert["completion_condition"] == "out.txt exists and prints"
    assert cert["workdir"] == str(tmp_path.resolve())
    run_check, exists_check = cert["checks"]
    assert run_check["name"] == "prints" and run_check["exit_code"] == 0
    assert run_check["output_digest"] == digest_text("hello\n")
    assert run_check["spec"]["run"] == CHECK
    assert exists_check["spec"] == {"name": "file_exists: out.txt", "timeout": None,
                                    "file_exists": "out.txt"}  # fmt: skip
    [record] = result.evidence
    assert cert["evidence"]["count"] == 1
    assert cert["evidence"]["records"][0]["digest"] == record.digest
    assert cert["transcript"]["digest"] == transcript_digest(cert["transcript"]["data"])
    typed = Certificate.from_data(cert)  # the outputs it refers to resolve to the run's own
    assert transcript_digest(typed.transcript_messages()) == transcript_digest(
        result.run.transcript
    )
    assert cert["transcript"]["messages"] == len(result.run.transcript) == 5
    assert cert["models"] == {"worker": "script:worker", "verifier": None}
    assert cert["times"]["started"] <= cert["times"]["finished"]
    assert (cert["continuations"], cert["model_calls"]) == (0, 2)
    assert cert["digest"] == certificate_digest(cert)


def test_a_fresh_certificate_verifies(tmp_path: Path) -> None:
    result = finished(tmp_path)
    assert verify_certificate(result.certificate or "") == (True, [])


def test_the_written_file_is_the_certificate_its_digest_and_signature_cover(
    tmp_path: Path,
) -> None:
    # The writer serializes each value once and joins the texts: what it wrote must be what
    # the digest and the signature were computed over, recomputed here from the file's JSON.
    result = finished(tmp_path)
    path = result.certificate
    assert path is not None
    text = path.read_text()
    cert = json.loads(text)
    assert list(cert)[:2] == ["kind", "version"] and list(cert)[-2:] == ["digest", "signature"]
    assert text.endswith("}\n") and "\n" not in text[:-1]
    assert cert["digest"] == certificate_digest(cert)
    assert cert["signature"] == sign({k: v for k, v in cert.items() if k != "signature"})
    assert cert["workdir"] == str(tmp_path.resolve())


def test_a_broken_world_fails_the_rerun(tmp_path: Path) -> None:
    result = finished(tmp_path)
    (tmp_path / "out.txt").unlink()
    ok, problems = verify_certificate(result.certificate or "")
    assert not ok
    assert problems[0].startswith("prints: fails now (exit code 1")
    assert problems[1] == "file_exists: out.txt: fails now (out.txt does not exist)"
    assert verify_certificate(result.certificate or "", rerun=False) == (True, [])


def test_changed_output_is_a_problem_only_when_strict(tmp_path: Path) -> None:
    result = finished(tmp_path)
    (tmp_path / "out.txt").write_text("different")
    assert verify_certificate(result.certificate or "")[0]
    ok, problems = verify_certificate(result.certificate or "", strict_output=True)
    assert not ok and problems == ["prints: output differs from the certified output"]


def test_an_edited_certificate_is_caught(tmp_path: Path) -> None:
    path = finished(tmp_path).certificate
    assert path is not None
    cert = load(path)
    cert["completion_condition"] = "anything at all"
    path.write_text(json.dumps(cert))
    assert verify_certificate(path) == (
        False, ["signature: does not match; the certificate was changed or forged"]
    )  # fmt: skip
    # re-signed without fixing the digest: the digest still tells
    resign(cert, digest=False)
    path.write_text(json.dumps(cert))
    assert verify_certificate(path) == (
        False, ["certificate digest mismatch: the file was changed after it was written"]
    )  # fmt: skip


def test_edited_evidence_is_caught(tmp_path: Path) -> None:
    path = finished(tmp_path).certificate
    assert path is not None
    cert = load(path)
    cert["evidence"]["data"][0]["output"] = "wrote 999 bytes to out.txt"
    path.write_text(json.dumps(cert))
    ok, problems = verify_certificate(path)
    assert not ok
    assert problems == ["signature: does not match; the certificate was changed or forged"]
    # one who also fixes the digest and the signature is still caught by the evidence's
    resign(cert)
    path.write_text(json.dumps(cert))
    assert verify_certificate(path) == (
        False,
        [
            "evidence: record 0 (write_file) does not match its digest",
            "evidence: the evidence digest does not match",
        ],
    )


def test_an_edited_transcript_is_caught(tmp_path: Path) -> None:
    path = finished(tmp_path).certificate
    assert path is not None
    cert = load(path)
    cert["transcript"]["data"][-1]["parts"][0]["text"] = "Wrote out.txt and ran the tests."
    resign(cert)
    path.write_text(json.dumps(cert))
    assert verify_certificate(path) == (False, ["transcript: the transcript digest does not match"])


def test_unsigned_version_1_certificates_are_refused(tmp_path: Path) -> None:
    path = finished(tmp_path).certificate
    assert path is not None
    cert = load(path)
    del cert["signature"]
    cert["version"] = 1
    cert["digest"] = certificate_digest(cert)
    path.write_text(json.dumps(cert))
    ok, problems = verify_certificate(path)
    assert not ok and problems[0].startswith("version: 1 is not 2; unsigned certificates")
    cert["version"] = 2
    path.write_text(json.dumps(cert))
    assert verify_certificate(path) == (
        False, ["signature: missing; the certificate is not signed"]
    )  # fmt: skip


def test_a_certificate_signed_with_another_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = finished(tmp_path).certificate
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", "ed25519:" + "77" * 32)
    ok, problems = verify_certificate(path or "")
    assert not ok and problems[0].startswith("signature: made with an untrusted key")


@pytest.mark.parametrize("content", ["not json", '{"kind": "something else"}', None])
def test_bad_input_is_a_user_error(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "cert.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UserError):
        verify_certificate(path)


def test_a_full_disk_leaves_no_half_certificate_and_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    from donegate.harness import certificate as module

    result = finished(tmp_path)
    assert result.certificate is not None
    cert = module.Certificate.model_validate_json(result.certificate.read_bytes())
    real_write, calls = os.write, []

    def fills_up(
        fd: int, data: Any
    ) -> int:  # the first write takes 10 bytes, then the disk is full
        calls.append(fd)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, bytes(data[:10]))

    monkeypatch.setattr(module.os, "write", fills_up)
    target = tmp_path / "full"
    with pytest.raises(OSError) as caught:
        module.write_certificate(cert, target)
    assert caught.value.errno == errno.ENOSPC and len(calls) == 2
    assert caught.value.filename is not None and caught.value.filename.startswith(str(target))
    assert list(target.iterdir()) == []  # the half-written file is gone
