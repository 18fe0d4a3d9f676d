"""The live probe's scratch copy: only donegate's hooks (for the doctor's task) are retargeted at
the probe task, and nothing else in the config changes; Codex's project trust is keyed by the
git root, as Codex 0.171.0 keys it."""

from __future__ import annotations

import shlex
from pathlib import Path

from donegate.harness.agents import AGENTS
from donegate.harness.agents.doctor import codex_project
from donegate.harness.agents.install import hook_command
from donegate.harness.agents.probe import rewrite_hooks


def _settings(*commands: str) -> dict[str, object]:
    return {
        "model": "x",
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": c} for c in commands]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}],
        },
    }


def test_only_the_gate_s_hooks_for_the_task_are_retargeted(tmp_path: Path) -> None:
    claude = AGENTS["claude"]
    mine, other = tmp_path / "task.yaml", tmp_path / "other.yaml"
    probe = tmp_path / "scratch" / "probe task.yaml"
    ours = hook_command(claude, mine, deadline=540)
    theirs = hook_command(claude, other, deadline=540)
    data = _settings(ours, theirs, "echo done")
    out, count = rewrite_hooks(data, claude, mine, probe)
    assert count == 1
    handlers = out["hooks"]["Stop"][0]["hooks"]
    argv = shlex.split(handlers[0]["command"])
    assert argv[argv.index("--task") + 1] == str(probe)
    assert argv[: argv.index("--task")] == shlex.split(ours)[: argv.index("--task")]
    assert [h["command"] for h in handlers[1:]] == [theirs, "echo done"]
    assert out["hooks"]["PreToolUse"] == data["hooks"]["PreToolUse"]  # type: ignore[index]
    assert out["model"] == "x"
    assert data["hooks"]["Stop"][0]["hooks"][0]["command"] == ours  # type: ignore[index]


def test_without_a_task_every_donegate_hook_of_the_cli_is_retargeted(tmp_path: Path) -> None:
    codex = AGENTS["codex"]
    probe = tmp_path / "probe.yaml"
    commands = [hook_command(codex, tmp_path / f"t{i}.yaml", deadline=9) for i in range(2)]
    equals = "python -m donegate hook codex --task=/x/t.yaml"
    out, count = rewrite_hooks(_settings(*commands, equals, "donegate-lint"), codex, None, probe)
    assert count == 3
    got = [h["command"] for h in out["hooks"]["Stop"][0]["hooks"]]
    assert all(str(probe) in c for c in got[:3]) and got[3] == "donegate-lint"
    assert f"--task={probe}" in got[2]


def test_codex_keys_a_project_by_its_git_root(tmp_path: Path) -> None:
    plain = tmp_path / "plain" / "sub"
    plain.mkdir(parents=True)
    assert codex_project(plain) == plain.resolve()
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg").mkdir()
    assert codex_project(repo / "pkg") == repo.resolve()


def test_a_block_counts_as_delivered_only_in_a_later_model_request() -> None:
    from donegate.harness.agents.probe import PROBE_CHECK, _delivered

    first = {"kind": "model", "body": {"messages": [{"content": "probe"}]}}
    later = {"kind": "model", "body": {"messages": [{"content": f"check {PROBE_CHECK} failed"}]}}
    side = {"kind": "model", "side_call": True, "body": {"x": PROBE_CHECK}}
    assert _delivered([first, later])
    assert not _delivered([first])
    assert not _delivered([later])  # the first request cannot carry a block yet
    assert not _delivered([first, side])
    assert not _delivered([first, {"kind": "admin", "body": PROBE_CHECK}])


def test_the_probe_s_line_says_what_was_and_was_not_seen() -> None:
    from donegate.harness.agents.probe import ProbeResult

    claude = AGENTS["claude"]
    seen = ProbeResult(fired=True, delivered=True, exit_code=0, seconds=12.0, output="")
    assert seen.ok and "fired, blocked once, and its reason reached the model" in seen.line(claude)
    lost = ProbeResult(fired=True, delivered=False, exit_code=0, seconds=1.0, output="")
    assert not lost.ok and "never reached the model" in lost.line(claude)
    silent = ProbeResult(fired=False, delivered=False, exit_code=None, seconds=9.0, output="")
    line = silent.line(claude)
    assert not silent.ok and "stopped at the time limit" in line and "never fired" in line
