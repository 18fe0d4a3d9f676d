"""Agents donegate has no hook for, under ``donegate exec --agent command``, against the
emulator: Copilot CLI (``@github/copilot``, BYOK: ``COPILOT_OFFLINE=true`` and
``COPILOT_PROVIDER_BASE_URL`` point it at an OpenAI-compatible endpoint, no GitHub login),
resumed with ``copilot --continue -p {reason}``; and OpenCode (``opencode-ai``: a provider of
``@ai-sdk/openai-compatible`` in ``OPENCODE_CONFIG_CONTENT``; its title call is a side call),
resumed with ``opencode run --continue {reason}``. Installed by ``.ci/agents_extra.sh``; locally a
missing CLI skips, in CI (``DONEGATE_REQUIRE_AGENTS_EXTRA=1``) it fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.agents_e2e._agents import SRC, Emulate

SCRIPTS = Path(__file__).resolve().parent / "scripts"
PREFIX = Path(os.environ.get("DONEGATE_AGENTS_EXTRA", "/opt/agents-extra"))
PROMPT = "write a.txt and b.txt"
RESUME = {"copilot": "copilot --continue --allow-all-tools -p {reason}",
          "opencode": "opencode run --continue {reason}"}  # fmt: skip
START = {"copilot": ["copilot", "--allow-all-tools", "-p", PROMPT],
         "opencode": ["opencode", "run", PROMPT]}  # fmt: skip


def agent_bin(name: str) -> Path:
    path = PREFIX / "node_modules" / ".bin" / name
    if not os.access(path, os.X_OK):
        if os.environ.get("DONEGATE_REQUIRE_AGENTS_EXTRA"):
            pytest.fail(f"{path} is missing: run .ci/agents_extra.sh's install_agents_extra")
        pytest.skip(f"{path} is not installed (.ci/agents_extra.sh installs it)")
    return path


def run_agent(
    agent: str, tmp_path: Path, script: str, budget: int
) -> tuple[int, dict[str, object], Emulate]:
    binary = agent_bin(agent)
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    task = tmp_path / "task.yaml"
    task.write_text(yaml.safe_dump({"id": "ab", "prompt": PROMPT, "max_continuations": budget,
                                    "checks": [{"file_exists": "a.txt"},
                                               {"file_exists": "b.txt"}]}))  # fmt: skip
    with Emulate(SCRIPTS / agent / f"{script}.yaml", side_calls=agent == "opencode") as emu:
        env = {
            "PATH": f"{binary.parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(SRC),
            "DONEGATE_HOME": str(tmp_path / "donegate"),
            "COPILOT_OFFLINE": "true",
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_PROVIDER_BASE_URL": f"{emu.base_url}/v1",
            "COPILOT_PROVIDER_API_KEY": "test",
            "COPILOT_MODEL": "gpt-4.1",
            "OPENCODE_CONFIG_CONTENT": json.dumps(
                {
                    "provider": {
                        "emu": {
                            "npm": "@ai-sdk/openai-compatible",
                            "name": "emulator",
                            "options": {"baseURL": f"{emu.base_url}/v1", "apiKey": "test"},
                            "models": {"gpt-test": {}},
                        }
                    },
                    "model": "emu/gpt-test",
                    "small_model": "emu/gpt-test",
                }
            ),
        }
        argv = [sys.executable, "-m", "donegate", "exec", "--task", str(task), "--json",
                "--agent", "command", "--resume", RESUME[agent], "--", *START[agent]]  # fmt: skip
        proc = subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        summary = json.loads(proc.stdout) if proc.stdout.startswith("{") else {}
        assert summary, proc.stderr[-3000:]
        emu.assert_exhausted()
    return proc.returncode, summary, emu


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.parametrize("agent", ["copilot", "opencode"])
def test_resumed_once_ends_done(agent: str, tmp_path: Path) -> None:
    code, summary, _ = run_agent(agent, tmp_path, "continued", budget=2)
    assert (code, summary["status"], summary["continuations"]) == (0, "done", 1)


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.parametrize("agent", ["copilot", "opencode"])
def test_stuck_escalates_at_max_continuations(agent: str, tmp_path: Path) -> None:
    code, summary, _ = run_agent(agent, tmp_path, "stuck", budget=2)
    assert (code, summary["status"], summary["continuations"]) == (3, "escalated", 2)
