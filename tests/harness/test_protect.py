"""Protected paths: the glob rules, the digests, what counts as a change, and failing closed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from donegate.harness import protect
from donegate.harness.protect import (
    Manifest,
    ProtectError,
    check_pattern,
    take_manifest,
    task_patterns,
    uses_pytest,
)
from donegate.harness.spec import TaskSpec


def files(root: Path, *paths: str) -> Path:
    for p in paths:
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_text(p)
    return root


@pytest.mark.parametrize(
    ("pattern", "path", "covered"),
    [
        ("tests/**", "tests/test_a.py", True),
        ("tests/**", "tests/a/b/c.py", True),
        ("tests/**", "testsx/a.py", False),
        ("tests", "tests/a/b.py", True),  # a directory covers what is under it
        ("tests/", "tests/a.py", True),
        ("**/conftest.py", "conftest.py", True),
        ("**/conftest.py", "a/b/conftest.py", True),
        ("**/conftest.py", "a/b/conftest.pyc", False),
        ("*.toml", "pyproject.toml", True),
        ("*.toml", "sub/pyproject.toml", False),  # anchored at the workdir
        ("*", ".hidden", True),
        ("a/**/b.py", "a/b.py", True),
        ("a/**/b.py", "a/x/y/b.py", True),
        ("t?st.py", "test.py", True),
        ("t?st.py", "t/st.py", False),
        ("[ab].py", "b.py", True),
        ("[!ab].py", "b.py", False),
        ("[!ab].py", "c.py", True),
        ("[].py", "[].py", True),  # an unclosed class is literal
        ("a+b(c).py", "a+b(c).py", True),
        ("tests/**", "tests/__pycache__/test_a.cpython-311.pyc", False),  # caches never
        # **/ does not pass through folders pytest does not collect from; naming them does
        ("**/conftest.py", ".venv/lib/site-packages/x/conftest.py", False),
        ("**/conftest.py", "node_modules/x/conftest.py", False),
        ("**/conftest.py", "a/venv/conftest.py", False),
        ("**/conftest.py", "a/.hidden/conftest.py", False),
        (".venv/**/conftest.py", ".venv/lib/conftest.py", True),
        ("**", ".github/workflows/ci.yml", True),
    ],
)
def test_glob_rules(pattern: str, path: str, covered: bool) -> None:
    assert Manifest(root=Path("/r"), patterns=(pattern,)).covers(path) is covered


def test_a_bang_takes_paths_out_but_never_a_pinned_one() -> None:
    m = Manifest(root=Path("/r"), patterns=("**", "!docs/**", "!task.yaml"), pinned=("task.yaml",))
    assert m.covers("src/a.py") and not m.covers("docs/index.md") and m.covers("task.yaml")


@pytest.mark.parametrize("bad", ["", "!", "/etc/passwd", "a/../b", "./a", "a//b", "a\\b"])
def test_unusable_patterns_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match=r"pattern|relative|segments"):
        check_pattern(bad)


@given(st.lists(st.sampled_from(["a", "b", "*", "**", "?", "[ab]", "x.py"]), min_size=1))
def test_every_well_formed_pattern_compiles(segments: list[str]) -> None:
    pattern = "/".join(segments)
    Manifest(root=Path("/r"), patterns=(check_pattern(pattern),)).covers("a/b/x.py")


def test_changes_name_each_file_changed_added_or_deleted(tmp_path: Path) -> None:
    root = files(tmp_path, "tests/a.py", "tests/b.py", "src/c.py")
    m = take_manifest(root, ["tests/**"])
    assert set(m.files) == {"tests/a.py", "tests/b.py"}
    assert m.changes() == ()
    (root / "tests/a.py").write_text("changed")
    (root / "tests/b.py").unlink()
    (root / "tests/new").mkdir()
    (root / "tests/new/c.py").write_text("")
    (root / "src/c.py").write_text("not protected")
    assert [c.text for c in m.changes()] == [
        "protected file changed: tests/a.py",
        "protected file deleted: tests/b.py",
        "protected file added: tests/new/c.py",
    ]


def test_a_symlink_is_an_entry_never_followed(tmp_path: Path) -> None:
    root = files(tmp_path, "tests/a.py", "elsewhere/a.py")
    m = take_manifest(root, ["tests/**"])
    (root / "tests/a.py").unlink()
    (root / "tests/a.py").symlink_to(root / "elsewhere/a.py")  # same bytes behind it
    os.symlink(root / "elsewhere", root / "tests/more")
    changes = {c.path: c.kind for c in m.changes()}
    assert changes == {"tests/a.py": "changed", "tests/more": "added"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_does_not_hang_the_digest(tmp_path: Path) -> None:
    root = files(tmp_path, "tests/a.py")
    m = take_manifest(root, ["tests/**"])
    (root / "tests/a.py").unlink()
    os.mkfifo(root / "tests/a.py")
    assert [c.text for c in m.changes()] == ["protected file changed: tests/a.py"]


def test_too_many_files_is_an_error_not_a_slow_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = files(tmp_path, "a", "b", "c")
    monkeypatch.setattr(protect, "MAX_PROTECTED_FILES", 2)
    with pytest.raises(ProtectError, match="more than 2 files match"):
        take_manifest(root, ["*"])


def test_the_walk_skips_folders_no_rule_reaches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = files(
        tmp_path, "tests/a.py", ".venv/lib/conftest.py", "node_modules/y/z.js", "src/conftest.py"
    )
    walked: list[str] = []
    real = os.walk

    def spy(top: str | os.PathLike[str]):  # type: ignore[no-untyped-def]
        for entry in real(top):
            walked.append(Path(entry[0]).relative_to(root).as_posix())
            yield entry

    monkeypatch.setattr(protect.os, "walk", spy)
    # the protected files' walk (take_manifest also walks the whole tree: Manifest.tree)
    Manifest(root=root.resolve(), patterns=("tests/**",)).current()
    assert walked == [".", "tests"]
    walked.clear()
    found = Manifest(root=root.resolve(), patterns=("**/conftest.py",)).current()
    assert set(found) == {"src/conftest.py"}
    assert walked == [".", "src", "tests"]


def test_planted_bytecode_of_a_protected_source_is_cleared(tmp_path: Path) -> None:
    root = files(tmp_path, "tests/test_a.py", "src/mod.py")
    m = take_manifest(root, ["tests/**"])
    cache = root / "tests" / "__pycache__"
    cache.mkdir()
    planted = cache / "test_a.cpython-311-pytest-8.3.2.pyc"
    planted.write_bytes(b"planted")
    other = cache / "helper.cpython-311.pyc"
    other.write_bytes(b"not a protected source's")
    assert m.changes() == ()  # caches are no change...
    m.clear_bytecode()  # ...but the protected source's is removed before the checks run
    assert not planted.exists() and other.exists()


def test_a_manifest_round_trips_and_tampered_data_is_refused(tmp_path: Path) -> None:
    root = files(tmp_path, "tests/a.py")
    m = take_manifest(root, ["tests/**"], pinned=["task.yaml"])
    again = Manifest.from_data(m.as_data(), root)
    assert again == m and again.covers("task.yaml")
    for bad in (
        [],
        {"patterns": "tests/**", "pinned": [], "files": {}},
        {"patterns": [], "pinned": [], "files": {"a": 1}},
        {"patterns": ["/abs"], "pinned": [], "files": {}},
    ):
        with pytest.raises(ValueError):
            Manifest.from_data(bad, root)


def task(**fields: object) -> TaskSpec:
    return TaskSpec.model_validate({"id": "t", "prompt": "p", **fields})


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ("pytest -q", True),
        ([sys.executable, "-m", "pytest"], True),
        ("uv run py.test tests", True),
        ("sh -c 'cd src && pytest'", True),
        ("python -m unittest", False),
        ("pytest-watch", False),
        ("make test", False),
    ],
)
def test_uses_pytest(run: str | list[str], expected: bool) -> None:
    assert uses_pytest(task(checks=[{"run": run}])) is expected


def test_task_patterns_protect_pytest_config_and_the_task_s_own_files(tmp_path: Path) -> None:
    (tmp_path / "checks").mkdir()
    spec = task(
        checks=[{"run": "pytest"}, {"python": "checks.ready:ok"}],
        protect=["tests/**"],
        verifier=f"script:{tmp_path / 'verifier.yaml'}",
    )
    patterns, pinned = task_patterns(spec, tmp_path, task_file=tmp_path / "task.yaml")
    assert patterns[0] == "tests/**" and "**/conftest.py" in patterns
    assert set(pinned) == {
        "verifier.yaml",
        "task.yaml",
        "checks/__init__.py",  # each package on the way, found or not: a shadow is an addition
        "checks/ready/__init__.py",
        "checks/ready.py",
    }
    outside = task_patterns(spec, tmp_path / "elsewhere", task_file=tmp_path / "task.yaml")
    assert outside[1] == ()
