"""``donegate exec --agent command``: any program, gated by exec itself.

The agents are shell scripts: they write files into the workdir and log the arguments and
``DONEGATE_REASON`` they were resumed with, so the tests assert what exec really passed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hookkit import reports, write_task

import donegate
from donegate.errors import UserError
from donegate.harness.agents.command import parse_resume, resume_argv
from donegate.harness.certificate import verify_certificate

SRC = Path(donegate.__file__).resolve().parents[1]

# Writes a.txt on its first run; resumed, writes b.txt. Logs each call's arguments and reason
# (one argument a line, so an argument holding spaces shows as one).
HALF_AGENT = """#!/bin/sh
for a in "$@"; do printf 'ARG %s\\n' "$a" >> "$AGENT_LOG"; done
printf 'REASON %s\\nEND\\n' "$DONEGATE_REASON" >> "$AGENT_LOG"
if [ ! -f a.txt ]; then
  echo a > a.txt
  echo "Progress: a.txt written, b.txt next."
else
  echo b > b.txt
  echo "Both files written."
fi
"""
# Never writes anything, whatever it is told.
STUCK_AGENT = """#!/bin/sh
for a in "$@"; do printf 'ARG %s\\n' "$a" >> "$AGENT_LOG"; done
printf 'REASON %s\\nEND\\n' "$DONEGATE_REASON" >> "$AGENT_LOG"
echo "I am done."
"""


@pytest.fixture
def ab_task(tmp_path: Path) -> Path:
    return write_task(
        tmp_path / "ab.yaml",
        id="ab",
        checks=[{"file_exists": "a.txt"}, {"file_exists": "b.txt"}],
        max_continuations=2,
    )


def script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def run_exec(
    args: list[str],
    *,
    homes: dict[str, Path],
    tmp_path: Path,
    extra_env: dict[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None, list[tuple[list[str], str]]]:
    """``donegate exec ARGS`` in the workdir: its process, its JSON, each agent call."""
    log = homes["work"] / ".agent-log.txt"  # in the workdir: the agent's sandbox shows it
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(SRC), "AGENT_LOG": str(log), **(extra_env or {})}  # fmt: skip
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        if name not in (extra_env or {}):
            env.pop(name, None)
    proc = subprocess.run([sys.executable, "-m", "donegate", "exec", *args], cwd=homes["work"],
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    summary = json.loads(proc.stdout) if proc.stdout.startswith("{") else None
    calls = []
    if log.exists():
        argv: list[str] = []
        reason = ""
        for line in log.read_text().splitlines():
            if line.startswith("ARG "):
                argv.append(line[4:])
            elif line.startswith("REASON "):
                reason = line[7:]
            elif line == "END":
                calls.append((argv, reason))
                argv, reason = [], ""
    return proc, summary, calls


@pytest.mark.slow
def test_half_done_agent_resumed_once_ends_done(
    ab_task: Path, homes: dict[str, Path], tmp_path: Path
) -> None:
    script(tmp_path, "half-agent", HALF_AGENT)
    args = ["--task", str(ab_task), "--json", "--agent", "command",
            "--resume", "half-agent --continue {reason}", "--", "half-agent", "start"]  # fmt: skip
    proc, summary, calls = run_exec(args, homes=homes, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert summary is not None
    assert summary["status"] == "done" and summary["continuations"] == 1
    assert [c["passed"] for c in summary["checks"]] == [True, True]
    assert len(calls) == 2
    assert calls[0] == (["start"], "")
    resumed, reason = calls[1]
    # {reason} is one argument, and the same text is in DONEGATE_REASON
    assert resumed[0] == "--continue" and len(resumed) == 2
    assert resumed[1] == reason and "b.txt" in reason and "a.txt" not in reason.split("(")[0]
    ok, problems = verify_certificate(summary["certificate"], workdir=homes["work"])
    assert ok, problems


@pytest.mark.slow
def test_stuck_agent_escalates_at_exactly_max_continuations(
    ab_task: Path, homes: dict[str, Path], tmp_path: Path
) -> None:
    script(tmp_path, "stuck-agent", STUCK_AGENT)
    args = ["--task", str(ab_task), "--json", "--max-continuations", "3",
            "--resume", "stuck-agent again {reason}", "--", "stuck-agent"]  # fmt: skip
    proc, summary, calls = run_exec(args, homes=homes, tmp_path=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert summary is not None and summary["status"] == "escalated"
    assert summary["continuations"] == 3
    assert len(calls) == 1 + 3  # the first run and exactly three resumes
    found = reports(homes["data"])
    assert len(found) == 1
    assert found[0]["continuations"] == 3 and found[0]["max_continuations"] == 3
    assert [c["name"] for c in found[0]["left"]["failed_checks"]] == [
        "file_exists: a.txt",
        "file_exists: b.txt",
    ]


@pytest.mark.slow
def test_without_resume_failing_checks_fail_the_run(
    ab_task: Path, homes: dict[str, Path], tmp_path: Path
) -> None:
    script(tmp_path, "half-agent", HALF_AGENT)
    args = ["--task", str(ab_task), "--json", "--agent", "command", "--", "half-agent"]
    proc, summary, calls = run_exec(args, homes=homes, tmp_path=tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert summary is not None and summary["status"] == "failed"
    assert "no --resume" in summary["reason"]
    assert len(calls) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--resume", "x 'unclosed", "--", "half-agent"], "cannot split the command"),
        (["--resume", "   ", "--", "half-agent"], "the command is empty"),
        (["--resume", "no-such-resume-binary", "--", "half-agent"], "no-such-resume-binary"),
        (["--agent", "command", "--", "no-such-agent-binary"], "command not found"),
        (["--resume", "half-agent", "--", "claude"], "--resume is for --agent command"),
    ],
)
def test_bad_command_mode_input_exits_2_before_running(
    args: list[str], message: str, ab_task: Path, homes: dict[str, Path], tmp_path: Path
) -> None:
    script(tmp_path, "half-agent", HALF_AGENT)
    proc, _, calls = run_exec(["--task", str(ab_task), *args], homes=homes, tmp_path=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert calls == []


def test_reason_replaces_the_placeholder_as_one_argument() -> None:
    words = parse_resume("agent --continue -m {reason} --tag=r:{reason}")
    reason = "Not done yet: failed checks; it's 'quoted' $(rm -rf /) a b"
    assert resume_argv(words, reason) == [
        "agent", "--continue", "-m", reason, f"--tag=r:{reason}"
    ]  # fmt: skip
    with pytest.raises(UserError, match="cannot split"):
        parse_resume('agent "open')
