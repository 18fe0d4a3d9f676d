"""``donegate hook doctor``: what would stop an installed hook from firing, one line each, read
from the CLI's own config (static diagnosis); and ``exec`` refusing a run whose hooks would not
fire, before the agent starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import donegate

SRC = Path(donegate.__file__).resolve().parents[1]


def donegate_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "donegate", *args], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(SRC), **(env or {})},
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def install(agent: str, task: Path, work: Path) -> None:
    done = donegate_cli("hook", "install", agent, "--task", str(task), "--dir", str(work),
                        "--no-doctor", cwd=work)  # fmt: skip
    assert done.returncode == 0, done.stderr


def doctor(agent: str, task: Path, work: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return donegate_cli("hook", "doctor", agent, "--static", "--dir", str(work),
                        "--task", str(task), cwd=work, env=env)  # fmt: skip


@pytest.mark.slow
def test_claude_passes_installed_and_fails_with_disable_all_hooks(
    task: Path, homes: dict[str, Path]
) -> None:
    work = homes["work"]
    install("claude", task, work)
    ok = doctor("claude", task, work)
    assert ok.returncode == 0, ok.stderr
    assert "nothing stops the gate's hook" in ok.stderr
    (homes["claude"] / "settings.json").write_text(json.dumps({"disableAllHooks": True}))
    bad = doctor("claude", task, work)
    assert bad.returncode == 1
    assert "disabled hooks: `disableAllHooks: true` in" in bad.stderr
    assert str(homes["claude"] / "settings.json") in bad.stderr


@pytest.mark.slow
def test_claude_project_local_disable_all_hooks_is_named(
    task: Path, homes: dict[str, Path]
) -> None:
    work = homes["work"]
    install("claude", task, work)
    (work / ".claude" / "settings.local.json").write_text('{"disableAllHooks": true}')
    bad = doctor("claude", task, work)
    assert bad.returncode == 1 and "(local settings)" in bad.stderr


@pytest.mark.slow
def test_codex_fails_without_trust_and_passes_trusted(task: Path, homes: dict[str, Path]) -> None:
    work = homes["work"]
    install("codex", task, work)
    bad = doctor("codex", task, work)
    assert bad.returncode == 1
    assert "untrusted hooks: codex exec skips" in bad.stderr
    assert "untrusted project" in bad.stderr
    hooks_file = work / ".codex" / "hooks.json"
    (homes["codex"] / "config.toml").write_text(
        f'[projects.{json.dumps(str(work))}]\ntrust_level = "trusted"\n\n'
        f'[hooks.state.{json.dumps(f"{hooks_file}:stop:0:0")}]\ntrusted_hash = "sha256:ab"\n'
    )
    ok = doctor("codex", task, work)
    assert ok.returncode == 0, ok.stderr


@pytest.mark.slow
def test_gemini_fails_in_an_untrusted_folder_and_passes_trusted(
    task: Path, homes: dict[str, Path]
) -> None:
    work = homes["work"]
    install("gemini", task, work)
    bad = doctor("gemini", task, work, GEMINI_CLI_TRUST_WORKSPACE="")
    assert bad.returncode == 1
    assert "untrusted folder: Gemini CLI skips" in bad.stderr
    folders = homes["gemini"] / ".gemini" / "trustedFolders.json"
    folders.parent.mkdir(exist_ok=True)
    folders.write_text(json.dumps({str(work): "TRUST_FOLDER"}))
    ok = doctor("gemini", task, work, GEMINI_CLI_TRUST_WORKSPACE="")
    assert ok.returncode == 0, ok.stderr
    folders.write_text(json.dumps({str(work.parent): "TRUST_FOLDER", str(work): "DO_NOT_TRUST"}))
    assert doctor("gemini", task, work, GEMINI_CLI_TRUST_WORKSPACE="").returncode == 1


@pytest.mark.slow
def test_not_installed_and_short_timeouts_are_named(tmp_path: Path, homes: dict[str, Path]) -> None:
    work = homes["work"]
    task = tmp_path / "slow.yaml"
    task.write_text(
        json.dumps(
            {
                "id": "slow",
                "prompt": "p",
                "checks": [{"run": "true", "timeout": 900, "name": "long"}],
            }
        )
    )
    none = doctor("claude", task, work)
    assert (
        none.returncode == 1
        and "not installed: no donegate a Stop hook for this task" in none.stderr
    )
    assert "not installed" in none.stderr
    install("claude", task, work)
    short = doctor("claude", task, work)
    assert short.returncode == 1
    assert "hook timeout:" in short.stderr and "'long' may take (900s)" in short.stderr


@pytest.mark.slow
def test_exec_refuses_before_the_agent_starts_when_hooks_are_disabled(
    task: Path, homes: dict[str, Path], tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "agent-ran"
    agent = bin_dir / "claude"
    agent.write_text(f'#!/bin/sh\n[ "$1" = --version ] && echo 2.1.197 && exit 0\ntouch {marker}\n')
    agent.chmod(0o755)
    (homes["claude"] / "settings.json").write_text('{"disableAllHooks": true}')
    proc = donegate_cli("exec", "--task", str(task), "--json", "--", "claude", "-p", "x",
                        cwd=homes["work"],
                        env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["status"] == "failed"
    assert "the gate's hook would not fire: disabled hooks" in summary["reason"]
    assert not marker.exists()


@pytest.mark.slow
def test_codex_static_names_the_exact_project_entry_a_parent_does_not_trust(
    task: Path, homes: dict[str, Path]
) -> None:
    work = homes["work"]
    install("codex", task, work)
    config = homes["codex"] / "config.toml"
    config.write_text(f'[projects.{json.dumps(str(work.parent))}]\ntrust_level = "trusted"\n')
    bad = doctor("codex", task, work)
    assert bad.returncode == 1
    entry = f'{config} lacks [projects.{json.dumps(str(work))}] trust_level = "trusted"'
    assert entry in bad.stderr
