"""``donegate certificate export CERT --in-toto``: an in-toto Statement v1 that round-trips
through the in-toto attestation framework's own bindings (``in-toto-attestation``: its protobuf
Statement and its ``validate``), with the certificate intact inside."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement

from donegate.errors import UserError
from donegate.harness.certificate import verify_certificate
from donegate.harness.intoto import PREDICATE_TYPE, STATEMENT_TYPE, delivered_files, statement
from donegate.harness.runner import run_task
from donegate.harness.spec import TaskSpec
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script


@pytest.fixture
def certified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A done task's certificate, and its workdir (out.txt, src/app.py, and a .git to skip)."""
    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / "home"))
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "src" / "app.py").write_text("print('hi')\n")
    spec = TaskSpec.model_validate(
        {"id": "write-out", "prompt": "Write out.txt.", "checks": [{"file_exists": "out.txt"}],
         "tools": ["write_file"]}
    )  # fmt: skip
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
    assert result.certificate is not None
    return Path(result.certificate), root


def round_trip(data: dict[str, Any]) -> dict[str, Any]:
    """Parse the JSON into the framework's Statement, validate it, and give it back as JSON."""
    pb = json_format.Parse(json.dumps(data), statement_pb2.Statement())  # type: ignore[attr-defined]
    Statement.copy_from_pb(pb).validate()
    out: dict[str, Any] = json_format.MessageToDict(pb)
    return out


def test_statement_round_trips_through_the_in_toto_bindings(certified: tuple[Path, Path]) -> None:
    cert, root = certified
    data = statement(cert)
    assert data["_type"] == STATEMENT_TYPE == "https://in-toto.io/Statement/v1"
    assert data["predicateType"] == PREDICATE_TYPE == "https://donegate.dev/certificate/v1"
    back = round_trip(data)
    assert back == data  # nothing lost or renamed (numbers compare equal as floats)
    subjects = {s["name"]: s["digest"]["sha256"] for s in data["subject"]}
    assert subjects == {
        "out.txt": hashlib.sha256(b"hello").hexdigest(),
        "src/app.py": hashlib.sha256(b"print('hi')\n").hexdigest(),
    }
    # the predicate is the certificate as signed: unwrapped, it still verifies
    unwrapped = root.parent / "unwrapped.json"
    unwrapped.write_text(json.dumps(data["predicate"]))
    ok, problems = verify_certificate(unwrapped, workdir=root)
    assert ok, problems


def test_a_statement_without_subjects_or_type_fails_the_framework_check(
    certified: tuple[Path, Path],
) -> None:
    """The round-trip check can fail: the framework rejects what the spec requires."""
    data = statement(certified[0])
    with pytest.raises(ValueError, match="subject"):
        round_trip({**data, "subject": []})
    with pytest.raises(ValueError, match="type"):
        round_trip({**data, "_type": "https://in-toto.io/Statement/v0.1"})
    with pytest.raises(ValueError, match="digest"):
        round_trip({**data, "subject": [{"name": "out.txt"}]})


def test_subjects_name_the_delivered_files(certified: tuple[Path, Path]) -> None:
    _, root = certified
    assert delivered_files(root, ["out.txt"]) == ["out.txt"]
    assert delivered_files(root, ["src"]) == ["src/app.py"]
    assert delivered_files(root, ["*.txt", "src/*.py"]) == ["out.txt", "src/app.py"]
    for bad in ("../x", "/etc/passwd"):
        with pytest.raises(UserError, match="inside the workdir"):
            delivered_files(root, [bad])
    with pytest.raises(UserError, match="matches no file"):
        delivered_files(root, ["*.rs"])
    (root / "escape").symlink_to("/etc/hostname")
    assert "escape" not in delivered_files(root)


@pytest.mark.slow
def test_cli_exports_the_statement(certified: tuple[Path, Path], tmp_path: Path) -> None:
    cert, _ = certified
    out = tmp_path / "statement.json"
    args = ["certificate", "export", str(cert), "--in-toto", "-o", str(out), "--subject", "*.txt"]
    proc = subprocess.run([sys.executable, "-m", "donegate", *args], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert [s["name"] for s in data["subject"]] == ["out.txt"]
    assert round_trip(data) == data
    bad = subprocess.run([sys.executable, "-m", "donegate", "certificate", "export", str(cert)],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert bad.returncode == 2 and "--in-toto" in bad.stderr
    not_cert = subprocess.run([sys.executable, "-m", "donegate", "certificate", "export",
                               str(out), "--in-toto"], capture_output=True, text=True,
                              timeout=60)  # fmt: skip
    assert not_cert.returncode == 2 and "not a donegate certificate" in not_cert.stderr
