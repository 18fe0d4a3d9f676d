"""``donegate verify`` with public keys only: anyone holding the public half can check a
certificate, nobody holding it can make one; a legacy HMAC certificate is reported as such;
a FIFO handed as the certificate is one line, exit 2, never a hang."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from donegate.harness.runner import run_task
from donegate.harness.signing import PublicKey, signing_key
from donegate.harness.spec import TaskSpec
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script

V2 = Path(__file__).parent.parent / "harness" / "data" / "certificate-v2.json"
V2_KEY = "the fixture key of a version 2 certificate"


def certified(root: Path) -> Path:
    """A certificate of a finished task, signed with this test's $DONEGATE_HOME key."""
    spec = TaskSpec.model_validate(
        {
            "id": "w",
            "prompt": "Write out.txt.",
            "checks": [{"file_exists": "out.txt"}],
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
    model = ScriptedModel(parse_script(script, source="t"), name="script:w")
    result = run_task(spec, model=model, workdir=root, completion_tool=None)
    assert result.certificate is not None
    return result.certificate


def donegate(*args: str, home: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """The real program, with only `home` as its data directory (no key unless `env` has one)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("DONEGATE_")}
    done = subprocess.run(
        [sys.executable, "-m", "donegate", *args],
        env={**base, "DONEGATE_HOME": str(home), **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.slow
def test_a_certificate_verifies_with_only_the_public_key(tmp_path: Path) -> None:
    cert = certified(tmp_path)
    public = signing_key(create=False).public
    elsewhere = tmp_path / "auditor-home"  # a machine that has never held the private key
    elsewhere.mkdir()
    code, out, err = donegate("verify", str(cert), "--public-key", public.text, home=elsewhere)
    assert (code, err) == (0, ""), err
    assert "verified" in out and not (elsewhere / "signing.key").exists()
    keys = tmp_path / "trusted.pub"
    keys.write_text(f"# our CI\n{public.text} ci\n")
    code, out, _ = donegate("verify", str(cert), "--no-rerun", "--json", home=elsewhere,
                            env={"DONEGATE_TRUSTED_KEYS": str(keys)})  # fmt: skip
    got = json.loads(out)
    assert code == 0 and (got["ok"], got["problems"], got["signature"]) == (True, [], "ed25519")
    assert got["isolation"]["certified"] is not None  # where the checks ran, as certified
    code, out, err = donegate("verify", str(cert), home=elsewhere)  # no key at all: bad input
    assert code == 2 and err.startswith("donegate: no key to verify with") and not out


@pytest.mark.slow
def test_key_init_show_and_export_give_the_public_half_a_verifier_needs(tmp_path: Path) -> None:
    home = tmp_path / "gate-home"
    code, made, err = donegate("key", "init", home=home)
    assert code == 0, err
    assert (home / "signing.key").stat().st_mode & 0o777 == 0o600
    code, shown, _ = donegate("key", "show", home=home)
    assert code == 0 and shown == made  # init made the key once; show reads the same one
    fields = dict(line.split(None, 1) for line in shown.splitlines())
    assert fields["fingerprint"].startswith("SHA256:" + fields["key_id"])
    code, exported, _ = donegate("key", "export", home=home)
    assert code == 0 and exported == f"{fields['public_key']} {fields['key_id']}\n"
    assert "PRIVATE" not in exported and "PRIVATE" not in shown
    pub = tmp_path / "gate.pub"
    pub.write_text(exported)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DONEGATE_HOME", str(home))
        cert = certified(tmp_path)
    assert json.loads(cert.read_text())["key_id"] == fields["key_id"]
    elsewhere = tmp_path / "auditor-home"
    code, out, err = donegate("verify", str(cert), "--no-rerun", "--public-key", str(pub),
                              home=elsewhere)  # fmt: skip
    assert (code, err) == (0, ""), out + err


@pytest.mark.slow
def test_a_certificate_signed_by_an_untrusted_key_is_exit_1_one_line(
    tmp_path: Path, donegate_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert = certified(tmp_path)
    stranger = PublicKey(raw=Ed25519PrivateKey.generate().public_key().public_bytes_raw())
    code, out, err = donegate("verify", str(cert), "--public-key", stranger.text, home=tmp_path)
    assert code == 1 and err == ""
    assert len(out.strip().splitlines()) == 1 and "made with an untrusted key" in out
    code, out, _ = donegate("verify", str(cert), "--no-rerun", home=donegate_home)
    assert code == 0  # the local key's public half is the default trusted set
    # A forger holding its own key makes a certificate that key signs; the local key's public
    # half (the default trusted set) rejects it.
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", "ed25519:" + "5a" * 32)
    forged = certified(tmp_path)
    code, out, _ = donegate("verify", str(forged), "--no-rerun", home=donegate_home)
    assert code == 1 and "made with an untrusted key" in out


@pytest.mark.slow
def test_a_legacy_hmac_certificate_verifies_as_legacy(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("hello")
    path = tmp_path / "old.certificate.json"
    shutil.copy(V2, path)
    code, out, err = donegate("verify", str(path), "--workdir", str(tmp_path), home=tmp_path,
                              env={"DONEGATE_SIGNING_KEY": V2_KEY})  # fmt: skip
    assert code == 0, err
    assert out.startswith("verified (legacy")
    code, out, _ = donegate("verify", str(path), "--no-rerun", "--json", home=tmp_path,
                            env={"DONEGATE_SIGNING_KEY": "some other old secret!"})  # fmt: skip
    assert code == 1 and json.loads(out)["signature"] == "legacy"


@pytest.mark.slow
def test_verify_on_a_fifo_is_one_line_exit_2(tmp_path: Path) -> None:
    fifo = tmp_path / "cert.json"
    os.mkfifo(fifo)
    code, out, err = donegate("verify", str(fifo), home=tmp_path)  # timeout=60: never a hang
    assert (code, out) == (2, "")
    assert err == f"donegate: {fifo}: not a regular file; a certificate is read from a file\n"
