"""The signing key: made once, atomically, private; a key the harness cannot trust signs nothing."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import threading
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
)

from donegate.errors import UserError
from donegate.harness.signing import (
    PublicKey,
    canonical,
    key_path,
    sign,
    sign_canonical,
    signature_problem,
    signature_scheme,
    signing_key,
    trusted_keys,
)


def test_the_key_file_is_made_on_first_use_private_and_kept(donegate_home: Path) -> None:
    path = key_path()
    assert path == donegate_home / "signing.key" and not path.exists()
    with pytest.raises(UserError, match="no signing key"):
        signing_key(create=False)  # verifying never invents a key
    key = signing_key(create=True).public
    assert len(key.raw) == 32 and len(key.key_id) == 16 and key.fingerprint.startswith(key.key_id)
    assert path.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert signing_key(create=False).public == key == signing_key(create=True).public
    assert [p.name for p in path.parent.iterdir()] == ["signing.key"]  # no temporary left


def test_signing_canonical_bytes_is_signing_the_body() -> None:
    body = {"b": [1, {"z": "é", "a": None}], "a": 2.5, "signature": {"value": "old"}}
    unsigned = canonical({k: v for k, v in body.items() if k != "signature"})
    assert sign_canonical(unsigned) == sign(body)
    assert sign_canonical(unsigned + b" ") != sign(body)


def test_racing_first_uses_agree_on_one_key() -> None:
    keys: list[bytes] = []
    threads = [threading.Thread(target=lambda: keys.append(signing_key(create=True).public.raw))
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
        ("not hex at all", 0o600, "not an Ed25519 private key"),
        ("ab" * 31, 0o600, "not an Ed25519 private key"),
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
    key = signing_key(create=True).public
    path = key_path()
    assert signing_key(create=False).public == key
    os.chmod(path, 0o644)
    with pytest.raises(UserError, match="readable by others"):
        signing_key(create=False)
    os.chmod(path, 0o600)
    assert signing_key(create=False).public == key
    other = Ed25519PrivateKey.generate()
    replacement = path.with_name("new.key")
    replacement.write_bytes(other.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    os.chmod(replacement, 0o600)
    os.replace(replacement, path)
    assert signing_key(create=False).public.raw == other.public_key().public_bytes_raw() != key.raw
    path.unlink()
    with pytest.raises(UserError, match="no signing key"):
        signing_key(create=False)


def _key_file(data: bytes) -> Path:
    path = key_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.chmod(path, 0o600)
    return path


@pytest.mark.parametrize("layout", ["as written", "crlf", "one line", "text before"])
def test_a_pem_key_file_is_the_key_cryptography_reads_in_it(layout: str) -> None:
    # The form the gate writes is read without cryptography's `serialization` (a hook stop's
    # import), any other form by it: either way the key is the one the file holds.
    other = Ed25519PrivateKey.generate()
    pem = other.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    head, body, tail = pem.strip().split(b"\n", 2)
    data = {"as written": pem, "crlf": pem.replace(b"\n", b"\r\n"),
            "one line": head + b"\n" + body + tail.replace(b"\n", b"") + b"\n",
            "text before": b"a note\n" + pem}[layout]  # fmt: skip
    _key_file(data)
    key = signing_key(create=False)
    assert key.public.raw == other.public_key().public_bytes_raw()
    assert key.private.private_bytes_raw() == other.private_bytes_raw()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            ec.generate_private_key(ec.SECP256R1()).private_bytes(
                Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()
            ),
            "not an Ed25519 key",
        ),
        (
            Ed25519PrivateKey.generate().private_bytes(
                Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(b"pw")
            ),
            "not an Ed25519 private key",
        ),
        (
            b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI\n-----END PRIVATE KEY-----\n",
            "not an Ed25519 private key",
        ),
    ],
    ids=["ec key", "encrypted", "cut short"],
)
def test_a_pem_key_file_holding_no_plain_ed25519_key_is_refused(data: bytes, message: str) -> None:
    _key_file(data)
    with pytest.raises(UserError, match=message):
        signing_key(create=False)


def test_a_symlinked_key_file_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "key"
    real.write_text("ab" * 32)
    os.chmod(real, 0o600)
    key_path().parent.mkdir(parents=True, exist_ok=True)
    key_path().symlink_to(real)
    with pytest.raises(UserError, match="cannot read the key file"):
        signing_key(create=False)


def test_the_environment_key_wins_and_must_not_be_weak(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", "short")
    with pytest.raises(UserError, match="shorter than 16 characters"):
        sign({"a": 1})
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", "ed25519:" + "12" * 32)
    body = {"a": 1}
    signed = {**body, "signature": sign(body)}
    assert signature_problem(signed) is None
    assert not key_path().exists()  # the environment's key needs no file
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", "ed25519:1234")
    with pytest.raises(UserError, match="64 hex digits"):
        sign(body)


def test_an_old_hmac_secret_in_the_environment_verifies_legacy_but_signs_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "a long enough shared secret"
    body = {"a": 1}
    key_id = hashlib.sha256(b"donegate key id\0" + secret.encode()).hexdigest()[:16]
    mac = hmac.new(secret.encode(), canonical(body), hashlib.sha256).hexdigest()
    legacy = {**body, "signature": {"alg": "HMAC-SHA256", "key_id": key_id, "value": mac}}
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", secret)
    assert signature_scheme(legacy) == "legacy" and signature_problem(legacy) is None
    assert signature_problem({**legacy, "a": 2}) is not None
    with pytest.raises(UserError, match="old HMAC secret: it verifies legacy certificates only"):
        sign(body)
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", "another long enough secret")
    assert "another key" in (signature_problem(legacy) or "")


def test_an_old_hmac_key_file_is_retired_and_still_verifies_legacy() -> None:
    path = key_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("ab" * 32 + "\n")
    os.chmod(path, 0o600)
    old = bytes.fromhex("ab" * 32)
    body = {"a": 1}
    key_id = hashlib.sha256(b"donegate key id\0" + old).hexdigest()[:16]
    mac = hmac.new(old, canonical(body), hashlib.sha256).hexdigest()
    legacy = {**body, "signature": {"alg": "HMAC-SHA256", "key_id": key_id, "value": mac}}
    assert signature_problem(legacy) is None
    signed = {**body, "signature": sign(body)}  # makes an Ed25519 key, keeps the old one aside
    assert signed["signature"]["alg"] == "Ed25519" and signature_problem(signed) is None
    assert (path.parent / "signing.hmac.key").read_text().strip() == "ab" * 32
    assert signature_problem(legacy) is None


def test_only_trusted_public_keys_verify(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    body = {"a": 1}
    signed = {**body, "signature": sign(body)}
    mine = signing_key(create=False).public
    other = PublicKey(raw=Ed25519PrivateKey.generate().public_key().public_bytes_raw())
    assert signature_problem(signed, trusted=trusted_keys(mine.text)) is None
    problem = signature_problem(signed, trusted=trusted_keys(other.text))
    assert problem is not None and problem.startswith("signature: made with an untrusted key")
    listed = tmp_path / "trusted"
    listed.write_text(f"# the CI machines\n{other.text} ci\n\n{mine.text} laptop\n")
    monkeypatch.setenv("DONEGATE_TRUSTED_KEYS", str(listed))
    assert [k.key_id for k in trusted_keys()] == [other.key_id, mine.key_id]
    assert signature_problem(signed) is None
    listed.write_text(f"{other.text}\n")
    assert signature_problem(signed) is not None
    listed.write_text("ed25519:notbase64!\n")
    with pytest.raises(UserError, match=f"{listed}:1: not a public key"):
        trusted_keys()


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
