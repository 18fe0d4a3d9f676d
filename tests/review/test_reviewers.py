"""Reviewers: a secret made once, only its KDF hash stored, checked in constant time; the
``--token-file`` that carries it is read like any handed file (regular, small, one line)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from donegate.errors import NotAReviewer, UserError
from donegate.review import add_reviewer, authenticate, read_token_file
from donegate.review.reviewers import hash_secret, secret_matches
from donegate.store.sql import SqlStore, open_store
from tests._cli import run


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    s = open_store(f"sqlite:///{tmp_path / 'r.db'}")
    yield s
    s.close()


def test_the_store_keeps_a_hash_that_only_the_secret_matches(store: SqlStore) -> None:
    secret = add_reviewer(store, "ann")
    [kept] = store.reviewers()
    assert kept.name == "ann" and secret not in kept.secret_hash
    assert kept.secret_hash.startswith("scrypt$")
    assert authenticate(store, secret).name == "ann"
    assert secret_matches(secret, kept.secret_hash)
    assert not secret_matches(secret + "x", kept.secret_hash)
    assert hash_secret(secret) != kept.secret_hash  # salted
    for wrong in (secret[:-1] + ("A" if secret[-1] != "A" else "B"), "dgr.ann.x", "", "ann"):
        with pytest.raises(NotAReviewer):
            authenticate(store, wrong)
    bob = add_reviewer(store, "bob")
    with pytest.raises(NotAReviewer):  # bob's random part under ann's name is not ann's
        authenticate(store, "dgr.ann." + bob.split(".", 2)[2])
    with pytest.raises(UserError, match="exists already"):
        add_reviewer(store, "ann")
    assert store.remove_reviewer("ann") and not store.remove_reviewer("ann")
    with pytest.raises(NotAReviewer):
        authenticate(store, secret)


@pytest.mark.parametrize("stored", ["", "scrypt$1$1$1$$", "scrypt$16384$8$1$c2FsdA$", "x$y"])
def test_a_malformed_stored_hash_matches_nothing(stored: str) -> None:
    assert not secret_matches("dgr.ann.anything", stored)


def test_a_token_file_is_a_small_regular_file_of_one_line(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_text("dgr.ann.abc\n")
    assert read_token_file(good) == "dgr.ann.abc"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big"
    big.write_text("x" * 5000)
    two = tmp_path / "two"
    two.write_text("a\nb\n")
    empty = tmp_path / "empty"
    empty.write_text("\n")
    cases = {
        fifo: "not a regular file",
        tmp_path: "not a regular file",
        big: "5000 bytes",
        two: "one line",
        empty: "one line",
        tmp_path / "missing": "cannot open",
    }
    for path, says in cases.items():
        with pytest.raises(UserError, match=says) as info:
            read_token_file(path)
        assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_reviewers_add_prints_the_secret_once_and_guards_the_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "q.db")
    code, out, err = run(capsys, "reviewers", "add", "ann", "--db", db)
    assert code == 0, err
    secret = out.strip()
    assert out.count("\n") == 1 and secret.startswith("dgr.ann.")
    assert "shown only now" in err
    ann = tmp_path / "ann.token"
    ann.write_text(secret)
    code, _, err = run(capsys, "reviewers", "add", "mallory", "--db", db)  # no secret: refused
    assert code == 2 and err.count("\n") == 1 and "needs a reviewer's secret" in err
    code, out, err = run(capsys, "reviewers", "add", "bob", "--token-file", str(ann), "--db", db)
    assert code == 0, err
    code, out, _ = run(capsys, "reviewers", "list", "--json", "--db", db)
    assert code == 0 and "dgr." not in out and "scrypt" not in out
    assert '"name": "ann"' in out and '"name": "bob"' in out and "mallory" not in out
    code, _, err = run(capsys, "reviewers", "remove", "bob", "--db", db)
    assert code == 2 and "needs a reviewer's secret" in err
    code, out, err = run(capsys, "reviewers", "remove", "bob", "--token-file", str(ann), "--db", db)
    assert (code, out) == (0, "reviewer bob removed\n"), err
    code, _, err = run(capsys, "reviewers", "add", "no good", "--db", db)
    assert code == 2 and "reviewer name 'no good'" in err
