"""The sandbox core: probing, the ``--isolation`` modes, and what a jailed program can see."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from donegate.errors import UserError
from donegate.harness import _process
from donegate.sandbox import Isolation, Jail, command, resolve
from donegate.sandbox._bwrap import system_paths
from donegate.sandbox._probe import PROCESS

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap is Linux only")


def jailed(iso: Isolation, jail: Jail, script: str, cwd: Path) -> tuple[int | None, str]:
    argv = command(["/bin/sh", "-c", script], isolation=iso, jail=jail)
    done = _process.run(argv, cwd=cwd, timeout=30)
    return done.returncode, done.output.head.decode()


def test_process_leaves_the_argv_as_it_is() -> None:
    assert command(["echo", "hi"], isolation=PROCESS, jail=Jail()) == ["echo", "hi"]
    assert resolve("process") == PROCESS
    assert PROCESS.as_data() == {"backend": "process", "version": ""}


def test_an_unknown_mode_is_one_line_naming_where(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UserError, match="--isolation: unknown isolation 'box'"):
        resolve("box")
    monkeypatch.setenv("DONEGATE_ISOLATION", "jail")
    with pytest.raises(UserError, match="DONEGATE_ISOLATION: unknown isolation 'jail'"):
        resolve()


def test_the_environment_chooses_when_no_mode_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DONEGATE_ISOLATION", "PROCESS")
    assert resolve().backend == "process"


def test_without_bwrap_auto_falls_back_and_sandbox_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert resolve("auto") == PROCESS
    with pytest.raises(UserError, match="isolation sandbox is not available: bwrap"):
        resolve("sandbox")


def test_a_bwrap_that_cannot_start_a_namespace_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo "bubblewrap 9.9"; exit 0; fi\n'
        "echo 'bwrap: No permissions to creating new namespace' >&2; exit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin:/bin")
    assert resolve("auto") == PROCESS
    with pytest.raises(UserError, match=r"cannot start a namespace here \(bwrap: No permissions"):
        resolve("sandbox")


def test_the_probe_records_the_version(sandbox: Isolation) -> None:
    shown = subprocess.run(["bwrap", "--version"], capture_output=True, text=True, check=True)
    assert sandbox.as_data() == {"backend": "sandbox", "version": shown.stdout.strip()}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A workdir, a secret beside it, a data folder, and a fake home with a user site file."""
    home = tmp_path / "home"
    (home / ".local").mkdir(parents=True)
    (home / ".local" / "note").write_text("user")
    monkeypatch.setenv("HOME", str(home))
    data = tmp_path / "data"
    data.mkdir()
    (data / "signing.key").write_text("KEY")
    monkeypatch.setenv("DONEGATE_HOME", str(data))
    work = tmp_path / "work"
    work.mkdir()
    (work / "mine.txt").write_text("mine")
    secret = tmp_path / "task"
    secret.mkdir()
    (secret / "checks.py").write_text("SECRET")
    return {"home": home, "data": data, "work": work, "task": secret}


def test_the_jail_shows_only_what_it_lists(sandbox: Isolation, world: dict[str, Path]) -> None:
    work = world["work"]
    script = (
        "cat mine.txt; echo; echo new > made.txt && echo wrote;"
        f" cat {world['task']}/checks.py || echo no-task;"
        f" cat {world['data']}/signing.key || echo no-key;"
        f" ls {world['home']}/.local || echo no-home;"
        " touch /usr/planted || echo no-usr;"
        " ls /tmp | wc -l;"
        f" {sys.executable} -c 'import donegate; print(\"donegate ok\")'"
    )
    code, out = jailed(sandbox, Jail(writable=(work,), cwd=work), script, work)
    assert code == 0, out
    for expected in ("mine", "wrote", "no-task", "no-key", "no-usr", "donegate ok"):
        assert expected in out, out
    assert "SECRET" not in out and "KEY" not in out and "note" not in out
    assert (work / "made.txt").read_text() == "new\n"


@pytest.mark.parametrize("started_in", ["home", "/"])
def test_the_home_stays_empty_when_the_gate_was_started_in_it(
    sandbox: Isolation, world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, started_in: str
) -> None:
    # `python -m donegate` puts its working folder first on sys.path; started in the home (or
    # in /), that folder was shown whole, and a reviewer's token in the home with it.
    token = world["home"] / ".config" / "donegate" / "ann.token"
    token.parent.mkdir(parents=True)
    token.write_text("dgr.ann.SECRET\n")
    first = world["home"] if started_in == "home" else Path("/")
    monkeypatch.setattr(sys, "path", [str(first), *sys.path])
    system_paths.cache_clear()
    try:
        script = f"cat {token} || echo no-token; cat /dev/null && echo devnull-ok"
        code, out = jailed(sandbox, Jail(writable=(world["work"],), cwd=world["work"]), script,
                           world["work"])  # fmt: skip
    finally:
        monkeypatch.undo()
        system_paths.cache_clear()
    assert code == 0, out
    assert "SECRET" not in out and "no-token" in out and "devnull-ok" in out, out


def test_the_data_folder_is_masked_even_under_a_listed_path(
    sandbox: Isolation, world: dict[str, Path]
) -> None:
    parent = world["data"].parent
    _, out = jailed(
        sandbox,
        Jail(readable=(parent,), hidden=(world["task"],)),
        f"cat {world['data']}/signing.key; cat {world['task']}/checks.py; cat work/mine.txt",
        parent,
    )
    assert "mine" in out and "KEY" not in out and "SECRET" not in out, out


def test_a_readable_path_inside_a_writable_one_stays_read_only(
    sandbox: Isolation, world: dict[str, Path]
) -> None:
    work = world["work"]
    (work / "tests").mkdir()
    (work / "tests" / "t.py").write_text("orig")
    jail = Jail(writable=(work,), readable=(work / "tests",), cwd=work)
    _, out = jailed(sandbox, jail, "echo x > tests/t.py || echo refused", work)
    assert "refused" in out and (work / "tests" / "t.py").read_text() == "orig"


def test_the_jail_has_its_own_pids_and_no_network_when_cut(
    sandbox: Isolation, world: dict[str, Path]
) -> None:
    work = world["work"]
    script = (
        f"kill -0 {os.getpid()} && echo saw-gate || echo no-gate;"
        f" cat /proc/{os.getpid()}/environ >/dev/null 2>&1 && echo env || echo no-env;"
        " cat /sys/class/net/*/address 2>/dev/null | wc -l; ls /proc | grep -c '^[0-9]'"
    )
    _, out = jailed(sandbox, Jail(writable=(work,), network=False, cwd=work), script, work)
    assert "no-gate" in out and "no-env" in out, out
    pids = int(out.split()[-1])
    assert pids <= 5, out  # bwrap's init, the shell, ls, grep: not the machine's processes
    py = f'{sys.executable} -c "import socket; print(len(socket.if_nameindex()))"'
    _, cut = jailed(sandbox, Jail(writable=(work,), network=False, cwd=work), py, work)
    _, shared = jailed(sandbox, Jail(writable=(work,), network=True, cwd=work), py, work)
    assert int(cut.split()[-1]) == 1 and int(shared.split()[-1]) == len(
        __import__("socket").if_nameindex()
    ), (cut, shared)


def test_a_room_is_shown_at_another_path(sandbox: Isolation, world: dict[str, Path]) -> None:
    room = world["data"].parent / "room"
    room.mkdir()
    (room / "mine.txt").write_text("room copy")
    work = world["work"]
    jail = Jail(rooms=((room, work),), cwd=work)
    _, out = jailed(sandbox, jail, "pwd; cat mine.txt; echo x > out.txt", work)
    assert str(work) in out and "room copy" in out, out
    assert (room / "out.txt").exists() and not (work / "out.txt").exists()


_PARTS = st.sampled_from(["a", "b", "ab", ".", "..", ""])
_PATHS = st.builds(
    lambda lead, parts: lead + "/".join(parts),
    st.sampled_from(["/", "", "a/"]),
    st.lists(_PARTS, max_size=5),
)


@given(_PATHS, _PATHS)
def test_at_or_below_is_path_parents_as_text(target: str, base: str) -> None:
    """The jail's path test, done on text, answers as `pathlib` does on the same paths (but
    for a leading ``//``, which `pathlib` takes for another root and Linux for ``/``)."""
    from donegate.sandbox._bwrap import _at_or_below

    assume(not os.path.abspath(target).startswith("//"))
    assume(not os.path.abspath(base).startswith("//"))
    t, b = Path(os.path.abspath(target)), Path(os.path.abspath(base))
    assert _at_or_below(os.path.abspath(target), os.path.abspath(base)) == (
        t == b or b in t.parents
    )
