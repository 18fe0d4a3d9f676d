"""The bwrap probe kept in the data directory: reused for the same binary, never for another."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from donegate.errors import UserError
from donegate.sandbox import Jail, _probe, command, resolve

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap is Linux only")


@pytest.fixture(autouse=True)
def fresh_probe() -> Iterator[None]:
    """Each test starts as a new process would: nothing probed in memory."""
    _probe._probe.cache_clear()
    _probe._unkept.clear()
    yield
    _probe._probe.cache_clear()
    _probe._unkept.clear()


def fake_bwrap(folder: Path, *, works: bool, version: str = "bubblewrap 9.9") -> Path:
    """A `bwrap` that logs each start in ``starts`` and starts a namespace only if it `works`."""
    folder.mkdir(exist_ok=True)
    fake = folder / "bwrap"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$1" >> {folder}/starts\n'
        f'if [ "$1" = --version ]; then echo "{version}"; exit 0; fi\n'
        + ("exit 0\n" if works else "echo 'bwrap: no namespaces' >&2; exit 1\n")
    )
    fake.chmod(0o755)
    return fake


def starts(folder: Path) -> int:
    log = folder / "starts"
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_probe_that_worked_is_not_started_again_by_the_next_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, donegate_home: Path
) -> None:
    bin_dir = tmp_path / "bin"
    fake_bwrap(bin_dir, works=True)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    first = resolve("sandbox")
    assert (first.backend, first.version) == ("sandbox", "bubblewrap 9.9")
    assert starts(bin_dir) == 2  # --version, then the trial namespace
    kept = donegate_home / "probes" / "bwrap.json"
    assert not kept.exists()  # kept when a jail starts, not at the probe
    command(["true"], isolation=first, jail=Jail())
    assert kept.stat().st_mode & 0o077 == 0
    _probe._probe.cache_clear()  # a new process
    assert resolve("auto") == first
    assert starts(bin_dir) == 2


def test_another_binary_at_the_same_path_is_probed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    fake = fake_bwrap(bin_dir, works=True)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    command(["true"], isolation=resolve("auto"), jail=Jail())
    _probe._probe.cache_clear()
    fake.unlink()
    fake_bwrap(bin_dir, works=False, version="bubblewrap 0.1 (another build)")
    assert resolve("auto").backend == "process"
    assert starts(bin_dir) == 4
    with pytest.raises(UserError, match="cannot start a namespace here"):
        resolve("sandbox")


def test_a_failed_probe_is_never_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, donegate_home: Path
) -> None:
    bin_dir = tmp_path / "bin"
    fake_bwrap(bin_dir, works=False)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    assert resolve("auto").backend == "process"
    assert not (donegate_home / "probes" / "bwrap.json").exists()
    _probe._probe.cache_clear()
    assert resolve("auto").backend == "process"
    assert starts(bin_dir) == 4


@pytest.mark.parametrize(
    "kept",
    [
        "not json",
        json.dumps({"key": "another binary", "version": "bubblewrap 9.9"}),
        None,  # the right key, a version that is no version (set below)
    ],
)
def test_a_kept_file_that_does_not_match_is_probed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, donegate_home: Path, kept: str | None
) -> None:
    bin_dir = tmp_path / "bin"
    fake = fake_bwrap(bin_dir, works=False)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    if kept is None:
        kept = json.dumps({"key": _probe._identity(str(fake)), "version": "\x1b[2Jbubblewrap"})
    (donegate_home / "probes").mkdir()
    (donegate_home / "probes" / "bwrap.json").write_text(kept)
    assert resolve("auto").backend == "process"
    assert starts(bin_dir) == 2


def test_an_unwritable_data_directory_still_probes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    fake_bwrap(bin_dir, works=True)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("DONEGATE_HOME", str(blocker / "home"))  # under a file: cannot be made
    found = resolve("auto")
    assert found.version == "bubblewrap 9.9"
    assert command(["true"], isolation=found, jail=Jail())[0] == str(bin_dir / "bwrap")


def test_a_probe_whose_process_starts_no_jail_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, donegate_home: Path
) -> None:
    bin_dir = tmp_path / "bin"
    fake_bwrap(bin_dir, works=True)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    assert resolve("sandbox").backend == "sandbox"  # as an option callback does
    assert list(donegate_home.iterdir()) == []
