"""``donegate hook install|uninstall``: merged into each CLI's project config without clobbering
anything, idempotent, a dry run that writes nothing, and an uninstall that removes exactly
what install added (Codex: its trust entries too, hashed by the real ``codex app-server``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hookkit import write_task
from tests import _cli

from donegate.harness.agents import AGENTS
from donegate.harness.agents.install import is_donegate_hook

CONFIG = {"claude": ".claude/settings.json", "codex": ".codex/hooks.json",
          "gemini": ".gemini/settings.json"}  # fmt: skip
EVENTS = {"claude": ["SessionStart", "Stop", "SubagentStop"],
          "codex": ["SessionStart", "Stop", "SubagentStop"],
          "gemini": ["SessionStart", "AfterAgent"]}  # fmt: skip


def donegate_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``donegate ARGS`` in this process (only exit codes, output and the files are asserted)."""
    if args[:2] == ("hook", "install"):
        # install's closing doctor runs the real CLI (tests/agents_e2e/test_doctor_live.py)
        args = (*args, "--no-doctor")
    return _cli.donegate(*args, cwd=cwd)


def existing(agent: str) -> dict[str, Any]:
    """A project config with the user's own settings and hooks."""
    other = {"type": "command", "command": "./scripts/lint.sh", "timeout": 30}
    stop = "AfterAgent" if agent == "gemini" else "Stop"
    return {
        "model": "their-choice",
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            stop: [{"hooks": [other]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}],
        },
    }


def ours(data: dict[str, Any], agent: str, task: Path) -> dict[str, list[dict[str, Any]]]:
    """donegate's handlers per event in a config."""
    found: dict[str, list[dict[str, Any]]] = {}
    for event, groups in data.get("hooks", {}).items():
        for group in groups:
            for h in group.get("hooks", []):
                if is_donegate_hook(h.get("command"), AGENTS[agent], task):
                    found.setdefault(event, []).append(h)
    return found


@pytest.mark.parametrize("agent", sorted(CONFIG))
def test_install_merges_is_idempotent_and_uninstall_restores(
    agent: str, homes: dict[str, Path], tmp_path: Path
) -> None:
    work, task = homes["work"], write_task(tmp_path / "task.yaml")
    config = work / CONFIG[agent]
    config.parent.mkdir()
    before = existing(agent)
    config.write_text(json.dumps(before, indent=2) + "\n")

    args = ["--task", str(task), "--dir", str(work)]
    dry = donegate_cli("hook", "install", agent, *args, "--dry-run", cwd=work)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith(f"--- {config}\n+++ {config}\n")
    assert json.loads(config.read_text()) == before  # a dry run writes nothing

    done = donegate_cli("hook", "install", agent, "--task", str(task), "--dir", str(work), cwd=work)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{config}: installed\n"
    after = json.loads(config.read_text())
    handlers = ours(after, agent, task)
    assert sorted(handlers) == sorted(EVENTS[agent])
    for event in EVENTS[agent]:
        [handler] = handlers[event]
        assert handler["timeout"] == (600_000 if agent == "gemini" else 600)
        assert handler["command"].endswith(f"hook {agent} --task {task} --deadline 540")
    # everything the user had is still there, as it was
    assert {k: v for k, v in after.items() if k != "hooks"} == {
        k: v for k, v in before.items() if k != "hooks"
    }
    for event, groups in before["hooks"].items():
        assert after["hooks"][event][: len(groups)] == groups
    installed = config.read_text()

    again = donegate_cli(
        "hook", "install", agent, "--task", str(task), "--dir", str(work), cwd=work
    )
    assert again.stdout == f"{config}: unchanged\n"
    assert config.read_text() == installed

    gone = donegate_cli("hook", "uninstall", agent, "--task", str(task), "--dir", str(work),
                        cwd=work)  # fmt: skip
    assert gone.returncode == 0, gone.stderr
    assert json.loads(config.read_text()) == before
    assert config.read_text() == json.dumps(before, indent=2) + "\n"


@pytest.mark.parametrize("agent", sorted(CONFIG))
def test_a_config_install_created_is_removed_by_uninstall(
    agent: str, homes: dict[str, Path], tmp_path: Path
) -> None:
    work, task = homes["work"], write_task(tmp_path / "task.yaml")
    args = ["--task", str(task), "--dir", str(work)]
    assert donegate_cli("hook", "install", agent, *args, cwd=work).returncode == 0
    assert (work / CONFIG[agent]).is_file()
    out = donegate_cli("hook", "uninstall", agent, *args, cwd=work)
    assert out.returncode == 0, out.stderr
    assert list(work.iterdir()) == []  # the file and the folder made for it are gone


def test_uninstall_leaves_other_tasks_and_shared_groups(
    homes: dict[str, Path], tmp_path: Path
) -> None:
    work = homes["work"]
    one, two = write_task(tmp_path / "one.yaml"), write_task(tmp_path / "two.yaml", id="two")
    config = work / ".claude" / "settings.json"
    for task in (one, two):
        assert donegate_cli("hook", "install", "claude", "--task", str(task), "--dir", str(work),
                            cwd=work).returncode == 0  # fmt: skip
    data = json.loads(config.read_text())
    # the user moves a handler of theirs into donegate's group for task one
    data["hooks"]["Stop"][0]["hooks"].append({"type": "command", "command": "./notify.sh"})
    config.write_text(json.dumps(data))
    out = donegate_cli("hook", "uninstall", "claude", "--task", str(one), "--dir", str(work),
                       cwd=work)  # fmt: skip
    assert out.returncode == 0, out.stderr
    left = json.loads(config.read_text())
    assert ours(left, "claude", one) == {}
    assert sorted(ours(left, "claude", two)) == EVENTS["claude"]
    assert left["hooks"]["Stop"][0]["hooks"] == [{"type": "command", "command": "./notify.sh"}]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"hooks": []}', "its `hooks` is not an object"),
        ('{"hooks": {"Stop": {}}}', "its `hooks.Stop` is not a list"),
    ],
)
def test_a_config_it_cannot_merge_is_a_usage_error(
    content: str, message: str, homes: dict[str, Path], tmp_path: Path
) -> None:
    work, task = homes["work"], write_task(tmp_path / "task.yaml")
    config = work / ".claude" / "settings.json"
    config.parent.mkdir()
    config.write_text(content)
    out = donegate_cli("hook", "install", "claude", "--task", str(task), "--dir", str(work),
                       cwd=work)  # fmt: skip
    assert out.returncode == 2
    assert message in out.stderr and len(out.stderr.splitlines()) == 1
    assert config.read_text() == content


def test_install_usage_errors_exit_2(homes: dict[str, Path], tmp_path: Path) -> None:
    work = homes["work"]
    task = write_task(tmp_path / "task.yaml")
    cases = [
        (["hook", "install", "cursor", "--task", str(task)], "unknown agent 'cursor'"),
        (["hook", "install", "claude", "--task", str(tmp_path / "no.yaml")], "does not exist"),
        (["hook", "install", "gemini", "--task", str(task), "--trust"], "--trust is for codex"),
    ]
    for args, message in cases:
        out = donegate_cli(*args, cwd=work)
        assert out.returncode == 2, out
        assert message in out.stderr


@pytest.mark.slow
def test_codex_trust_is_recorded_by_codex_itself_and_removed_again(
    homes: dict[str, Path], tmp_path: Path
) -> None:
    codex = shutil.which("codex")
    if codex is None:
        if os.environ.get("DONEGATE_REQUIRE_CODEX"):
            pytest.fail("DONEGATE_REQUIRE_CODEX is set but codex is not on PATH")
        pytest.skip("Codex CLI is not installed (npm install -g @openai/codex)")
    from donegate.harness.agents.codex import hook_hashes

    work, task = homes["work"], write_task(tmp_path / "task.yaml")
    config = homes["codex"] / "config.toml"
    original = f'model = "m"\n\n[projects."{work}"]\ntrust_level = "trusted"\n'
    config.write_text(original)
    out = donegate_cli("hook", "install", "codex", "--task", str(task), "--dir", str(work),
                       "--trust", cwd=work)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"{work}/.codex/hooks.json: installed",
                                       f"{config}: trusted"]  # fmt: skip
    listed = hook_hashes(codex, env=os.environ, cwd=work)
    mine = {h["eventName"]: h["trustStatus"] for h in listed if h["source"] == "project"}
    assert mine == {"sessionStart": "trusted", "stop": "trusted", "subagentStop": "trusted"}
    again = donegate_cli("hook", "install", "codex", "--task", str(task), "--dir", str(work),
                         "--trust", cwd=work)  # fmt: skip
    assert again.stdout.splitlines() == [f"{work}/.codex/hooks.json: unchanged",
                                         f"{config}: unchanged"]  # fmt: skip
    gone = donegate_cli("hook", "uninstall", "codex", "--task", str(task), "--dir", str(work),
                        cwd=work)  # fmt: skip
    assert gone.returncode == 0, gone.stderr
    assert config.read_text() == original
    assert not (work / ".codex").exists()


def test_codex_install_without_trust_says_how_to_trust(
    homes: dict[str, Path], tmp_path: Path
) -> None:
    work, task = homes["work"], write_task(tmp_path / "task.yaml")
    out = donegate_cli("hook", "install", "codex", "--task", str(task), "--dir", str(work),
                       cwd=work)  # fmt: skip
    assert out.returncode == 0
    assert "--trust" in out.stderr and "--dangerously-bypass-hook-trust" in out.stderr
