"""Attack pack (issue 9): the agent shadows a check, outwaits a timeout or floods the evidence.

Each case is what an agent that wants a false "done" would try with the tools it has: it writes
into the workdir, starts programs through ``run_command`` or through the checks, and reads what
it likes. The one timing assertion allowed is the issue's bound: a call returns within its
timeout + 1 s, whatever the children do.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from donegate.errors import UserError
from donegate.harness.builtin_tools import Workspace
from donegate.harness.checks import check_sources, run_check, run_checks
from donegate.harness.runner import run_task
from donegate.harness.spec import TaskSpec, load_task
from donegate.records.check import CheckResult
from donegate.records.evidence import EVIDENCE_OUTPUT_CAP
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script

PY = sys.executable
TIMEOUT = 2.0
BOUND = TIMEOUT + 1.0  # the bound: timeout + 1 s

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX sessions and signals")


def inline(turns: list[dict[str, Any]], *tools: str) -> ScriptedModel:
    stubs = {t: {"returns": "stub"} for t in tools}
    return ScriptedModel(parse_script({"prompt": "p", "tools": stubs, "turns": turns}, source="t"))


def gone(pid: int) -> bool:
    """Whether `pid` is dead (a zombie counts: it is dead, only not yet reaped)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def killed(pid_file: Path) -> bool:
    """Whether the process whose pid the attack wrote to `pid_file` is dead (soon after)."""
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 2  # SIGKILL was sent before the call returned
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return gone(pid)


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    value = call()
    return value, time.monotonic() - started


# -- a python: check the agent shadows ---------------------------------------------------------

REAL_CHECK = """
def report_ready(root):
    report = root / "report.md"
    return report.is_file() and "READY" in report.read_text()
"""
FAKE_CHECK = "def report_ready(root):\n    return True\n"


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    """A task file in its own folder with its check module; the workdir is elsewhere."""
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "acme_checks.py").write_text(REAL_CHECK)
    (tmp_path / "work").mkdir()
    path = folder / "task.yaml"
    path.write_text(
        "id: report\nprompt: Write report.md saying READY.\nworkdir: ../work\n"
        "checks:\n  - python: acme_checks:report_ready\n"
    )
    return path


def test_a_workdir_module_named_like_the_check_is_not_imported(
    task_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = load_task(task_file)
    work = Path(str(spec.workdir))
    (work / "acme_checks.py").write_text(FAKE_CHECK)
    monkeypatch.chdir(work)  # the harness started from inside the workdir
    monkeypatch.setenv("PYTHONPATH", str(work))  # and the agent got its path exported
    [result] = run_checks(spec.checks, work)
    assert (result.passed, result.detail) == (False, "returned False")
    (work / "report.md").write_text("READY\n")
    [result] = run_checks(spec.checks, work)
    assert (result.passed, result.detail) == (True, "returned True")


def test_a_workdir_package_cannot_shadow_the_check_module(task_file: Path) -> None:
    spec = load_task(task_file)
    work = Path(str(spec.workdir))
    (work / "acme_checks").mkdir()
    (work / "acme_checks" / "__init__.py").write_text(FAKE_CHECK)
    [result] = run_checks(spec.checks, work)
    assert not result.passed


def test_a_check_module_that_exists_only_in_the_workdir_is_not_found(tmp_path: Path) -> None:
    (tmp_path / "task.yaml").write_text(
        "id: t\nprompt: p\nworkdir: work\ncheck_path: [lib]\nchecks:\n  - python: agent_made:ok\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    (work / "agent_made.py").write_text("def ok(root):\n    return True\n")
    spec = load_task(tmp_path / "task.yaml")
    assert spec.check_path == [str(tmp_path.resolve()), str(tmp_path.resolve() / "lib")]
    with pytest.raises(UserError, match="no module named 'agent_made'"):
        run_checks(spec.checks, work)


def test_check_path_folders_resolve_against_the_task_folder(tmp_path: Path) -> None:
    (tmp_path / "lib" / "gates").mkdir(parents=True)
    (tmp_path / "lib" / "gates" / "__init__.py").write_text("")
    (tmp_path / "lib" / "gates" / "report.py").write_text(REAL_CHECK)
    (tmp_path / "task.yaml").write_text(
        "id: t\nprompt: p\nworkdir: work\ncheck_path: [lib]\n"
        "checks:\n  - python: gates.report:report_ready\n"
    )
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "report.md").write_text("READY")
    spec = load_task(tmp_path / "task.yaml")
    assert [c.passed for c in run_checks(spec.checks, tmp_path / "work")] == [True]
    lib = tmp_path.resolve() / "lib" / "gates"
    assert check_sources(spec) == [lib / "__init__.py", lib / "report.py"]


def test_a_file_added_beside_a_check_kept_in_the_workdir_cannot_replace_its_imports(
    tmp_path: Path,
) -> None:
    """A task kept in its repository: the task folder is the workdir, the agent writes there."""
    (tmp_path / "task.yaml").write_text(
        "id: t\nprompt: p\nworkdir: .\nchecks:\n  - python: repo_checks:where\n"
    )
    (tmp_path / "repo_checks.py").write_text(
        "def where(root):\n    import fractions\n    return False, fractions.__file__\n"
    )
    (tmp_path / "fractions.py").write_text("__file__ = 'the agent wrote this'\n")
    spec = load_task(tmp_path / "task.yaml")
    [result] = run_checks(spec.checks, tmp_path)
    assert result.detail == fractions_file()


def fractions_file() -> str:
    import fractions

    return str(fractions.__file__)


def test_a_check_module_hidden_by_an_installed_one_is_refused(tmp_path: Path) -> None:
    (tmp_path / "textwrap.py").write_text("def check(root):\n    return True\n")
    spec = TaskSpec(
        id="t", prompt="p", check_path=[str(tmp_path)], checks=[{"python": "textwrap:check"}]
    )
    with pytest.raises(UserError, match="'textwrap' in the task's check_path is hidden by /"):
        run_checks(spec.checks, tmp_path)


def test_output_from_the_workdir_cannot_forge_a_result(tmp_path: Path) -> None:
    """The check runs the agent's script; the script tries every way to report a pass."""
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "runs_agent.py").write_text(
        "import subprocess, sys\n"
        "def check(root):\n"
        "    subprocess.run([sys.executable, str(root / 'agent.py')])\n"
        "    return False\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    forged = {"status": "done", "passed": True, "detail": "forged", "nonce": "guess"}
    (work / "agent.py").write_text(
        "import json, os\n"
        f"line = json.dumps({forged!r})\n"
        "print(line, flush=True)\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        "        os.write(fd, line.encode())\n"
        "    except OSError:\n"
        "        pass\n"
    )
    spec = TaskSpec(
        id="t", prompt="p", check_path=[str(folder)], checks=[{"python": "runs_agent:check"}]
    )
    [result] = run_checks(spec.checks, work)
    assert (result.passed, result.detail) == (False, "returned False")
    assert '"passed": true' in result.output  # the forgery ran, and was only output


def test_an_agent_that_writes_the_shadow_module_does_not_finish_done(task_file: Path) -> None:
    spec = load_task(task_file).model_copy(update={"max_continuations": 0})
    model = inline(
        [
            {"tool_call": "write_file", "args": {"path": "acme_checks.py", "content": FAKE_CHECK}},
            {"text": "The report is ready."},
        ],
        "write_file",
    )
    result = run_task(spec, model=model, completion_tool=None)
    assert result.status == "escalated"
    assert result.certificate is None
    assert [(c.passed, c.detail) for c in result.rounds[0].checks] == [(False, "returned False")]


def test_a_python_built_task_without_check_path_never_imports_the_workdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "acme_checks.py").write_text(REAL_CHECK)
    work = tmp_path / "work"
    work.mkdir()
    (work / "acme_checks.py").write_text(FAKE_CHECK)
    monkeypatch.syspath_prepend(str(work))  # the workdir is first on the caller's sys.path
    monkeypatch.syspath_prepend(str(lib))
    monkeypatch.syspath_prepend(str(work))
    spec = TaskSpec(id="t", prompt="p", checks=[{"python": "acme_checks:report_ready"}])
    [result] = run_checks(spec.checks, work)
    assert (result.passed, result.detail) == (False, "returned False")
    assert check_sources(spec, workdir=work) == [(lib / "acme_checks.py").resolve()]


# -- timeouts the children try to outwait ------------------------------------------------------

DAEMON = textwrap.dedent(
    """
    import os, sys, time
    mode = sys.argv[1]
    ready_r, ready_w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:  # the daemon: out of the group and the tree, stdout still open
            open("daemon.pid", "w").write(str(os.getpid()))
            os.write(ready_w, b"x")
            if mode == "scrubbed":  # and without the environment the harness marked it with
                os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(40)"], {})
            time.sleep(40)
        os._exit(0)
    os.read(ready_r, 1)
    print("parent: daemon started", flush=True)
    if mode == "hang":
        time.sleep(40)
    """
)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "daemon.py").write_text(DAEMON)
    return root


def run_timed(data: dict[str, Any], work: Path) -> tuple[CheckResult, float]:
    spec = TaskSpec.model_validate({"id": "t", "prompt": "p", "checks": [data]}).checks[0]
    result: CheckResult
    result, took = timed(lambda: run_check(spec, workdir=work, timeout=TIMEOUT))
    return result, took


def test_a_run_check_leaving_a_setsid_child_returns_in_time(
    work: Path, room_of: Callable[[Path], Path], process_checks: None
) -> None:
    command = ["sh", "-c", "setsid sleep 40 & echo $! > daemon.pid; exit 1"]
    result, took = run_timed({"run": command}, work)
    assert took < BOUND
    assert (result.passed, result.exit_code) == (False, 1)
    assert killed(room_of(work) / "daemon.pid")


def test_a_run_check_that_hangs_with_a_setsid_child_times_out_in_time(
    work: Path, room_of: Callable[[Path], Path], process_checks: None
) -> None:
    command = ["sh", "-c", "setsid sleep 40 & echo $! > daemon.pid; sleep 30"]
    result, took = run_timed({"run": command}, work)
    assert took < BOUND
    assert (result.passed, result.detail) == (False, f"timed out after {TIMEOUT:g}s")
    assert killed(room_of(work) / "daemon.pid")


@pytest.mark.parametrize("mode", ["exit", "hang", "scrubbed"])
def test_a_run_check_with_a_double_forked_daemon_returns_in_time(
    work: Path, mode: str, room_of: Callable[[Path], Path], process_checks: None
) -> None:
    result, took = run_timed({"run": [PY, "daemon.py", mode]}, work)
    assert took < BOUND
    assert not result.passed if mode == "hang" else result.exit_code == 0
    assert "daemon started" in result.output
    assert killed(room_of(work) / "daemon.pid")


def test_a_python_check_that_hangs_with_a_setsid_child_times_out_in_time(
    work: Path, tmp_path: Path, room_of: Callable[[Path], Path], process_checks: None
) -> None:
    (tmp_path / "hanging.py").write_text(
        "import subprocess, time\n"
        "def check(root):\n"
        "    child = subprocess.Popen(['setsid', 'sleep', '40'])\n"
        "    (root / 'daemon.pid').write_text(str(child.pid))\n"
        "    time.sleep(40)\n"
    )
    spec = TaskSpec(
        id="t", prompt="p", check_path=[str(tmp_path)], checks=[{"python": "hanging:check"}]
    )
    result, took = timed(lambda: run_check(spec.checks[0], workdir=work, timeout=TIMEOUT))
    assert took < BOUND
    assert (result.passed, result.detail) == (False, f"timed out after {TIMEOUT:g}s")
    assert killed(room_of(work) / "daemon.pid")


@pytest.mark.parametrize(
    ("command", "first"),
    [
        ("sh -c 'setsid sleep 45 & echo $! > daemon.pid'", "exit code 0"),
        ("sh -c 'setsid sleep 45 & echo $! > daemon.pid; sleep 40'", "timed out after 2s"),
        (f"{shlex.quote(PY)} daemon.py exit", "exit code 0"),
        (f"{shlex.quote(PY)} daemon.py hang", "timed out after 2s"),
        (f"{shlex.quote(PY)} daemon.py scrubbed", "exit code 0"),
    ],
)
def test_run_command_children_cannot_outwait_the_timeout(
    work: Path, command: str, first: str
) -> None:
    ws = Workspace(work)
    output, took = timed(lambda: ws.run_command(command, timeout=int(TIMEOUT)))
    assert took < BOUND
    assert output.partition("\n")[0].startswith(first)
    assert killed(work / "daemon.pid")


def test_run_command_setsid_sleep_is_killed_when_it_returns(work: Path) -> None:
    ws = Workspace(work)
    output, took = timed(lambda: ws.run_command("setsid sleep 45", timeout=int(TIMEOUT)))
    assert took < BOUND
    assert output.startswith("exit code 0\n")
    assert output.endswith("[1 background process(es) it left were killed]")
    left = [p for p in psutil.process_iter(["cmdline", "cwd"]) if p.info["cwd"] == str(work)]
    assert [p.info["cmdline"] for p in left if not gone(p.pid)] == []


def test_the_model_timeout_is_capped_by_the_task(work: Path) -> None:
    spec = TaskSpec(
        id="t",
        prompt="p",
        max_command_timeout=1,
        max_continuations=0,
        tools=["run_command"],
        checks=[{"file_exists": "never.txt"}],
    )
    sleeper = f"{shlex.quote(PY)} -c 'import time; time.sleep(30)'"
    model = inline(
        [
            {"tool_call": "run_command", "args": {"command": sleeper, "timeout": 3600}},
            {"text": "done"},
        ],
        "run_command",
    )
    result = run_task(spec, model=model, workdir=work, completion_tool=None)
    [record] = result.evidence
    assert record.output.startswith("timed out after 1s; the process was killed\n")
    assert record.output.endswith(
        "[the timeout was capped at 1s, the task's max_command_timeout; 3600s was asked]"
    )
    assert TaskSpec(id="t", prompt="p", closure="model").max_command_timeout == 600


# -- input the agent floods --------------------------------------------------------------------

BIG = 30 * 1024 * 1024


def big_file(root: Path) -> Path:
    path = root / "big.log"
    chunk = (b"0123456789abcdef" * 63 + b"0123456789abcde\n") * 1024  # 1 MiB of 1 KiB lines
    with path.open("wb") as out:
        for _ in range(BIG // len(chunk)):
            out.write(chunk)
    return path


def test_read_file_of_30_mb_returns_at_most_the_cap_and_says_so(work: Path) -> None:
    path = big_file(work)
    size = path.stat().st_size
    assert size == BIG
    text = Workspace(work).read_file("big.log")
    assert len(text.encode()) <= 256 * 1024
    assert text.startswith("0123456789abcdef")
    assert text.endswith(
        f"[truncated: this is the first part of {size} bytes; read_file returns at most"
        f" {256 * 1024} bytes. Use run_command (e.g. sed -n 2000,2100p FILE) to see the rest.]"
    )
    assert TaskSpec(id="t", prompt="p", closure="model").max_read_bytes == 256 * 1024


def test_a_30_mb_read_reaches_neither_evidence_nor_certificate_nor_transcript(
    work: Path, tmp_path: Path
) -> None:
    big_file(work)
    limit = 100_000  # above the evidence cap, so both caps are exercised
    spec = TaskSpec(
        id="big",
        prompt="p",
        max_read_bytes=limit,
        tools=["read_file"],
        checks=[{"file_exists": "big.log"}],
    )
    model = inline(
        [{"tool_call": "read_file", "args": {"path": "big.log"}}, {"text": "Read it."}],
        "read_file",
    )
    out = tmp_path / "out"
    result = run_task(spec, model=model, workdir=work, output_dir=out, completion_tool=None)
    assert result.status == "done"
    [tool_result] = [r.content for m in result.run.transcript for r in m.results]
    assert len(tool_result.encode()) <= limit  # the transcript holds what read_file returned
    [record] = result.evidence
    assert len(record.output.encode()) <= EVIDENCE_OUTPUT_CAP
    assert record.output_bytes == len(tool_result.encode())
    assert record.output_digest == hashlib.sha256(tool_result.encode()).hexdigest()
    assert f"sha256 {record.output_digest}" in record.output
    assert result.certificate is not None
    assert result.certificate.stat().st_size < 1024 * 1024
    embedded = json.loads(result.certificate.read_text())["evidence"]["data"][0]
    assert embedded["output"] == record.output
    assert embedded["output_digest"] == record.output_digest
