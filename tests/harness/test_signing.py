"""The signing key: made once, atomically, private; a key the harness cannot trust signs nothing."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from donegate.errors import UserError
from donegate.harness.signing import (
    canonical,
    key_path,
    sign,
    sign_canonical,
    signature_problem,
    signing_key,
)


def test_the_key_file_is_made_on_first_use_private_and_kept(donegate_home: Path) -> None:
    path = key_path()
    assert path == donegate_home / "signing.key" and not path.exists()
    with pytest.raises(UserError, match="no signing key"):
        signing_key(create=False)  # verifying never invents a key
    key = signing_key(create=True)
    assert len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert signing_key(create=False) == key == signing_key(create=True)
    assert [p.name for p in path.parent.iterdir()] == ["signing.key"]  # no temporary left


def test_signing_canonical_bytes_is_signing_the_body() -> None:
    body = {"b": [1, {"z": "é", "a": None}], "a": 2.5, "signature": {"value": "old"}}
    unsigned = canonical({k: v for k, v in body.items() if k != "signature"})
    assert sign_canonical(unsigned) == sign(body)
    assert sign_canonical(unsigned + b" ") != sign(body)


def test_racing_first_uses_agree_on_one_key() -> None:
    keys: list[bytes] = []
    threads = [threading.Thread(target=lambda: keys.append(signing_key(create=True)))
               for _ in range(8)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(keys) == 8 and len(set(keys)) == 1


@pytest.mark.parametrize(
    ("content", "mode", "message"),
    [
        ("ab" * 32, 0o644, "readable by others"),
        ("not hex at all", 0o600, "not 64 hex digits"),
        ("ab" * 31, 0o600, "not 64 hex digits"),
    ],
)
def test_an_untrustworthy_key_file_is_refused(content: str, mode: int, message: str) -> None:
    path = key_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    os.chmod(path, mode)
    with pytest.raises(UserError, match=message):
        signing_key(create=True)
    with pytest.raises(UserError, match=message):
        sign({"a": 1})


def test_a_key_read_once_is_checked_again_when_its_file_changes() -> None:
    # The key is kept once read, but only while its file is unchanged: a chmod, a rewrite or a
    # replacement is read and checked anew.
    key = signing_key(create=True)
    path = key_path()
    assert signing_key(create=False) == key
    os.chmod(path, 0o644)
    with pytest.raises(UserError, match="readable by others"):
        signing_key(create=False)
    os.chmod(path, 0o600)
    assert signing_key(create=False) == key
    replacement = path.with_name("new.key")
    replacement.write_text("cd" * 32 + "\n")
    os.chmod(replacement, 0o600)
    os.replace(replacement, path)
    assert signing_key(create=False) == bytes.fromhex("cd" * 32) != key
    path.unlink()
    with pytest.raises(UserError, match="no signing key"):
        signing_key(create=False)


def test_a_symlinked_key_file_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "key"
    real.write_text("ab" * 32)
    os.chmod(real, 0o600)
    key_path().parent.mkdir(parents=True, exist_ok=True)
    key_path().symlink_to(real)
    with pytest.raises(UserError, match="cannot read the signing key"):
        signing_key(create=False)


def test_the_environment_key_wins_and_must_not_be_weak(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", "short")
    with pytest.raises(UserError, match="shorter than 16 characters"):
        sign({"a": 1})
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", "a long enough shared secret")
    body = {"a": 1}
    signed = {**body, "signature": sign(body)}
    assert signature_problem(signed) is None
    assert not key_path().exists()  # the environment's key needs no file


def test_the_signature_covers_every_field_but_itself() -> None:
    body = {"a": 1, "b": {"c": [1, 2]}}
    signed = {**body, "signature": sign(body)}
    assert signature_problem(signed) is None
    assert signature_problem({**signed, "b": {"c": [2, 1]}}) is not None
    assert signature_problem({**signed, "extra": None}) is not None
    assert signature_problem({**signed, "signature": "x"}) == "signature: malformed"
    bad = {**signed["signature"], "alg": "none"}
    assert (
        signature_problem({**signed, "signature": bad}) == "signature: unsupported algorithm 'none'"
    )
    odd = {**signed["signature"], "value": "é" * 64}
    assert signature_problem({**signed, "signature": odd}) is not None  # no TypeError
