"""The session guard that fails a run leaving files outside its tmp dirs (`tests/_tree_guard`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests import _tree_guard


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    (repo / ".gitignore").write_text("ignored/\n")
    (repo / "kept.py").write_text("x = 1\n")
    (repo / "edited.py").write_text("y = 1\n")  # already changed before the session
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    (repo / "edited.py").write_text("y = 2\n")
    return repo


def test_a_new_changed_or_removed_file_in_the_repository_is_named(tmp_path: Path) -> None:
    repo, home = _repo(tmp_path), tmp_path / "home"
    home.mkdir()
    before = _tree_guard.snapshot(repo, home)
    assert _tree_guard.changes(before, _tree_guard.snapshot(repo, home)) == []
    (repo / "calc.py").write_text("")
    (repo / "deep" / "er").mkdir(parents=True)
    (repo / "deep" / "er" / "out.txt").write_text("")
    (repo / "kept.py").write_text("x = 2\n")
    (repo / "edited.py").write_text("y = 3, a longer line\n")
    (repo / "ignored").mkdir()
    (repo / "ignored" / "cache").write_text("")  # git ignores it: not the guard's business
    left = _tree_guard.changes(before, _tree_guard.snapshot(repo, home))
    assert left == ["repo:calc.py", "repo:deep/er/out.txt", "repo:edited.py", "repo:kept.py"]


def test_a_new_home_entry_or_a_write_under_the_donegate_home_is_named(tmp_path: Path) -> None:
    repo, home = _repo(tmp_path), tmp_path / "home"
    (home / ".donegate" / "certificates").mkdir(parents=True)
    (home / ".cache").mkdir()
    before = _tree_guard.snapshot(repo, home)
    (home / ".cache" / "tool").write_text("")  # inside another tool's own folder: not ours
    (home / ".claude.json").write_text("{}")
    (home / ".donegate" / "certificates" / "x.json").write_text("{}")
    left = _tree_guard.changes(before, _tree_guard.snapshot(repo, home))
    assert "home:.claude.json" in left
    assert "home:.donegate/certificates/x.json" in left
    assert not [p for p in left if p.startswith("home:.cache")]
