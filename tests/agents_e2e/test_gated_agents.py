"""Each real agent CLI, gated by donegate, against scripted model turns on the emulator.

Claude Code (the oldest supported and the newest), Codex CLI and Gemini CLI, each gated both
ways a user would (``donegate exec`` and ``donegate hook install``), each asked to write four
files while its script stops short in a different way. What is asserted is the world and the
gate's records: the files, the model requests the emulator received (their number, and which of
them carried a new message from the gate), exit codes, certificates and escalation reports.
Never the words a CLI wraps a block's reason in: they differ between CLIs and versions.

Skipped only when a binary is missing and its ``DONEGATE_REQUIRE_*`` variable is unset.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from donegate.harness.checks import run_checks
from donegate.harness.spec import load_task
from donegate.sandbox import resolve
from tests.agents_e2e._agents import ALL, CHECK_PREFIX, FILES, Cli, Emulate, Mode, Run, Session

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

MODES: tuple[Mode, ...] = ("exec", "install")
TICKED = {  # the items each todos_ticked.yaml creates and ticks
    "claude": ("write a.txt and b.txt", "write c.txt and d.txt"),
    "codex": ("write a.txt, b.txt, c.txt and d.txt",),
    "gemini": ("write a.txt and b.txt", "write c.txt and d.txt"),
}
each_cli = pytest.mark.parametrize("cli", ALL, ids=[c.label for c in ALL])
each_mode = pytest.mark.parametrize("mode", MODES)


def isolation() -> str:
    """The backend exec runs the CLIs under here: ``sandbox`` wherever bwrap works (CI)."""
    return resolve().backend


def written(session: Session) -> list[str]:
    return sorted(p.name for p in session.work.iterdir() if p.is_file())


def failed_checks(run: Run) -> list[str]:
    assert run.summary is not None, run.explain()
    return [c["name"] for c in run.summary["checks"] if not c["passed"]]


@each_mode
@each_cli
def test_a_progress_report_is_continued_to_done(cli: Cli, mode: Mode, tmp_path: Path) -> None:
    session = Session(cli, tmp_path)
    with Emulate(*session.scripts("continued")) as emu:
        run = session.run(emu, mode, max_continuations=2)
        run.assert_exhausted(emu)

    # Four model requests: the first writes, the progress report (blocked), the rest, the end.
    assert len(run.requests) == 4, run.explain()
    assert run.gate_messages() == [2], run.explain()  # the request after the progress report
    assert written(session) == sorted(FILES)
    checks = run_checks(load_task(session.task).checks, session.work, timeout=30)
    assert [c.passed for c in checks] == [True] * len(FILES)
    assert run.reports() == []
    assert run.code == 0, run.explain()
    if mode == "exec":
        assert run.summary is not None
        assert (run.summary["status"], run.summary["continuations"]) == ("done", 1)
        assert run.summary["isolation"]["backend"] == isolation()  # the whole CLI in bwrap
        assert run.summary["agent"]["name"] == cli.kind
        assert failed_checks(run) == []
        certificate = run.summary["certificate"]
        assert run.certificates() == [Path(certificate)]  # in the data directory, signed
    else:  # installed hooks: the passing stop itself writes the one certificate
        [only] = run.certificates()
        certificate = str(only)
    # Both modes: the certificate proves itself (its digests match, its checks pass again).
    verify = [sys.executable, "-m", "donegate", "verify", certificate,
              "--workdir", str(session.work)]  # fmt: skip
    env = {**os.environ, "DONEGATE_HOME": str(session.donegate_home)}  # its signing key
    proved = subprocess.run(verify, capture_output=True, text=True, env=env, check=False)
    assert proved.returncode == 0, proved.stdout + proved.stderr


@each_mode
@each_cli
def test_a_stuck_session_escalates_after_exactly_max_continuations(
    cli: Cli, mode: Mode, tmp_path: Path
) -> None:
    session = Session(cli, tmp_path)
    with Emulate(*session.scripts("stuck")) as emu:
        run = session.run(emu, mode, max_continuations=2)
        run.assert_exhausted(emu)

    # The writes, then three stops: two blocked (Codex and Gemini have no cap of their own;
    # Claude Code's is 8), the third let through with a report.
    assert len(run.requests) == 4, run.explain()
    assert run.gate_messages() == [2, 3], run.explain()
    assert written(session) == ["a.txt", "b.txt"]  # the world as the agent left it
    [report] = run.reports()
    assert (report["continuations"], report["max_continuations"]) == (2, 2)
    assert [c["name"] for c in report["left"]["failed_checks"]] == [
        f"{CHECK_PREFIX} c.txt",
        f"{CHECK_PREFIX} d.txt",
    ]
    if mode == "exec":
        assert run.code == 3, run.explain()
        assert run.summary is not None
        assert (run.summary["status"], run.summary["continuations"]) == ("escalated", 2)
        assert run.summary["certificate"] is None
        assert Path(run.summary["escalation"]["json"]).is_file()
        assert Path(run.summary["escalation"]["markdown"]).is_file()
        assert failed_checks(run) == [f"{CHECK_PREFIX} c.txt", f"{CHECK_PREFIX} d.txt"]
    else:
        assert run.code == 0, run.explain()  # the CLI itself reports success: the gate does not


@each_mode
@each_cli
def test_todo_items_ticked_complete_are_not_done_while_a_check_fails(
    cli: Cli, mode: Mode, tmp_path: Path
) -> None:
    session = Session(cli, tmp_path)
    with Emulate(*session.scripts("todos_ticked")) as emu:
        run = session.run(emu, mode, max_continuations=1)
        run.assert_exhausted(emu)

    last = len(run.requests) - 1
    assert run.gate_messages() == [last], run.explain()  # one block, after "all complete"
    assert written(session) == ["a.txt", "b.txt"]
    [report] = run.reports()
    # The gate read the agent's own list from where the CLI keeps it, every item ticked, and
    # still did not call it done: the checks decide.
    ticked = [(i["item"], i["status"]) for i in report["state"]["checklist"]]
    assert ticked == [(item, "done") for item in TICKED[cli.kind]], report["state"]
    assert report["left"]["open_items"] == []
    assert [c["name"] for c in report["left"]["failed_checks"]] == [
        f"{CHECK_PREFIX} c.txt",
        f"{CHECK_PREFIX} d.txt",
    ]
    if mode == "exec":
        assert run.code == 3, run.explain()
        assert run.summary is not None
        assert run.summary["status"] == "escalated"
        assert run.summary["certificate"] is None


@each_mode
@each_cli
def test_an_unreadable_task_file_blocks_fail_closed_then_escalates(
    cli: Cli, mode: Mode, tmp_path: Path
) -> None:
    session = Session(cli, tmp_path)
    sandboxed = mode == "exec" and isolation() == "sandbox"
    scripts = session.scripts("unreadable_task")
    if sandboxed:  # the script's last stop is never reached (the gate escalates one sooner)
        scripts = [_first_turns(path, 6, tmp_path) for path in scripts]
    with Emulate(*scripts) as emu:
        run = session.run(emu, mode, max_continuations=3)
        run.assert_exhausted(emu)

    if sandboxed:
        # exec's sandbox: the task file is out of the agent's reach (its rm fails), so every
        # stop is judged on the checks: blocked three times, then escalated.
        assert session.task.is_file(), run.explain()
        assert len(run.requests) == 6, run.explain()
        assert run.gate_messages() == [2, 4, 5], run.explain()
        assert run.gate_messages("Is a directory") == [], run.explain()
        [report] = run.reports()
        assert (report["continuations"], report["max_continuations"]) == (3, 3)
        assert run.code == 3, run.explain()
        assert run.summary is not None
        assert (run.summary["status"], run.summary["continuations"]) == ("escalated", 3)
        assert failed_checks(run) == [f"{CHECK_PREFIX} c.txt", f"{CHECK_PREFIX} d.txt"]
        return
    assert session.task.is_dir()  # the agent's shell made the hook's task file unreadable
    # Blocked once on the checks while the task could be read; then each stop the gate could
    # not judge was blocked too (the OS error names why), three times, then escalated.
    assert len(run.requests) == 7, run.explain()
    assert run.gate_messages() == [2], run.explain()
    assert run.gate_messages("Is a directory") == [4, 5, 6], run.explain()
    [report] = run.reports()
    assert (report["continuations"], report["max_continuations"]) == (3, 3)
    errors = [r["error"] for r in report["why_stuck"]]
    assert errors and all(str(session.task) in e and "Is a directory" in e for e in errors)
    if mode == "exec":
        assert run.code == 3, run.explain()
        assert run.summary is not None
        assert (run.summary["status"], run.summary["continuations"]) == ("escalated", 4)
        assert Path(run.summary["escalation"]["json"]).is_file()
        assert run.summary["certificate"] is None


def _first_turns(script: Path, n: int, folder: Path) -> Path:
    """A copy of `script` holding only its first `n` turns."""
    data = yaml.safe_load(script.read_text())
    data["turns"] = data["turns"][:n]
    out = folder / f"{script.stem}-first-{n}.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out
