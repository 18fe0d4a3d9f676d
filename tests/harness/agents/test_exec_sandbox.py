"""``donegate exec`` with the sandbox: the whole agent CLI inside, its hooks through the relay.

The agent is `fake_agent.py` installed as ``claude``: from inside its sandbox it runs the probe
(``tests/harness/probe.py``) against the gate (this test process, which runs `exec_agent`),
then stops, and its Stop hook (the relay) hands the payload to the gate outside. Every attempt
on the gate fails; the gate's hook still decides (a block, then a pass); the certificate is
written outside. A relay that cannot reach the gate blocks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from hookkit import write_task

from donegate.harness.agents import AGENTS
from donegate.harness.agents.execute import exec_agent
from donegate.harness.agents.gateway import RELAY_SCRIPT, HookGateway, relay_command
from donegate.harness.spec import load_task
from donegate.sandbox import Isolation, resolve

FAKE = Path(__file__).resolve().parent / "fake_agent.py"
PROBE = Path(__file__).resolve().parents[1] / "probe.py"
RESULT = "PROBE-RESULT "


def sandbox() -> Isolation:
    try:
        return resolve("sandbox")
    except Exception as exc:  # no bwrap, or the kernel refuses namespaces
        pytest.skip(f"the sandbox is not available here: {exc}")


def install(tmp_path: Path, name: str = "claude") -> Path:
    """The fake agent as `name` in a folder of its own, with the probe beside it."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
    script.chmod(0o755)
    shutil.copy(PROBE, folder / "probe.py")
    return script


def run(
    task: Path, agent: Path, turns: list[dict[str, Any]], tmp_path: Path, isolation: Isolation
) -> tuple[Any, list[str]]:
    lines: list[str] = []
    home = tmp_path / "user-home"
    (home / ".local").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "FAKE_AGENT_TURNS": json.dumps(turns), "FAKE_AGENT_LOG": "-",
           "HOME": str(home), "GATE_SECRET": "gate-only"}  # fmt: skip
    spec = load_task(task)
    result = exec_agent(spec, task, [str(agent), "-p", "go"], agent=AGENTS["claude"],
                        progress=lines.append, env=env, isolation=isolation)  # fmt: skip
    return result, lines


def test_a_cli_under_exec_reaches_nothing_of_the_gate(
    tmp_path: Path, homes: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    key = homes["data"] / "signing.key"
    key.write_text("cd" * 32)
    key.chmod(0o600)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "checks.py").write_text("def ok(workdir):\n    return True\n")
    task = write_task(tasks / "task.yaml", checks=[{"file_exists": "a.txt"},
                                                   {"python": "checks:ok"}],
                      workdir=str(homes["work"]))  # fmt: skip
    agent = install(tmp_path)
    user_site = tmp_path / "user-home" / ".local" / "lib" / "python3" / "site-packages"
    purelib = Path(sysconfig.get_paths()["purelib"]) / "donegate_planted.pth"
    targets = {
        "read": [str(homes["data"]), str(key), str(tasks), str(task), str(tasks / "checks.py")],
        "write": [str(purelib), str(user_site / "usercustomize.py")],
        "gate": os.getpid(),
    }
    probe = [sys.executable, "-I", str(agent.with_name("probe.py")), json.dumps(targets)]
    turns = [{"run": probe, "say": "nothing written yet"}, {"write": {"a.txt": "a"}, "say": "done"}]
    try:
        result, lines = run(task, agent, turns, tmp_path, sandbox())
    finally:
        planted = purelib.exists()
        purelib.unlink(missing_ok=True)  # only there when the sandbox failed: never leave it
    assert not planted

    [line] = [x for x in lines if x.startswith(RESULT)]
    attempts = json.loads(line.removeprefix(RESULT))
    assert len(attempts) == 11
    assert [a for a in attempts if a["ok"]] == []
    assert not user_site.exists()
    # the gate outside still decided every stop, through the relay: a block, then a pass
    assert (result.status, result.continuations) == ("done", 1), (result.reason, lines)
    assert result.certificate is not None and result.certificate.is_relative_to(homes["data"])
    calls = [json.loads(x.removeprefix("FAKE-AGENT-LOG ")) for x in lines
             if x.startswith("FAKE-AGENT-LOG ")]  # fmt: skip
    assert [(c["event"], (c["answer"] or {}).get("decision")) for c in calls] == [
        ("SessionStart", None), ("Stop", "block"), ("Stop", None)]  # fmt: skip
    assert "every check passed" in calls[-1]["stderr"]  # the gate's own log, relayed
    settings = json.loads((result.run_dir / "claude-settings.json").read_text())
    [hook] = settings["hooks"]["Stop"][0]["hooks"]
    assert str(RELAY_SCRIPT) in hook["command"] and "--task" not in hook["command"]


def test_under_process_isolation_the_cli_runs_the_hook_itself(
    tmp_path: Path, homes: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    task = write_task(tmp_path / "task.yaml", checks=[{"file_exists": "a.txt"}],
                      workdir=str(homes["work"]))  # fmt: skip
    agent = install(tmp_path)
    process = Isolation(backend="process", version="")
    probe = [sys.executable, "-I", str(agent.with_name("probe.py")),
             json.dumps({"read": [str(task)], "gate": os.getpid()})]  # fmt: skip
    turns = [{"run": probe, "write": {"a.txt": "a"}, "say": "done"}]
    result, lines = run(task, agent, turns, tmp_path, process)
    assert result.status == "done", (result.reason, lines)
    [line] = [x for x in lines if x.startswith(RESULT)]
    got = {a["what"]: a["ok"] for a in json.loads(line.removeprefix(RESULT))}
    assert got[f"read {task}"] and got[f"kill -0 {os.getpid()}"]  # today's world: all open
    settings = json.loads((result.run_dir / "claude-settings.json").read_text())
    assert "--task" in settings["hooks"]["Stop"][0]["hooks"][0]["command"]


def test_a_relay_that_cannot_reach_the_gate_blocks(tmp_path: Path) -> None:
    for agent in AGENTS.values():
        command = relay_command(agent, tmp_path / "no-gate.sock")
        done = subprocess.run(command, shell=True, input=b'{"session_id": "s"}',
                              capture_output=True, check=False)  # fmt: skip
        assert done.returncode == 0
        answer = json.loads(done.stdout)
        assert answer["decision"] == agent.block_decision
        assert "cannot reach the gate" in answer["reason"]
        assert "cannot reach the gate" in done.stderr.decode()


def test_a_gate_that_dies_without_an_answer_blocks(tmp_path: Path) -> None:
    agent = AGENTS["gemini"]
    crash = [sys.executable, "-c", "import sys; sys.exit(1)"]
    with HookGateway(agent, crash, env=dict(os.environ), cwd=tmp_path, timeout_s=30) as gateway:
        done = subprocess.run(relay_command(agent, gateway.socket_path), shell=True,
                              input=b"{}", capture_output=True, check=False)  # fmt: skip
    answer = json.loads(done.stdout)
    assert answer["decision"] == "deny"
    assert "exited with code 1" in answer["reason"]


def test_the_gateway_hands_the_payload_to_the_hook_and_its_answer_back(tmp_path: Path) -> None:
    agent = AGENTS["claude"]
    echo = [sys.executable, "-c", "import sys, json; d = json.load(sys.stdin); "
            "print(json.dumps({'decision': 'block', 'reason': d['x'], 'argv': sys.argv[1:]})); "
            "print('logged', file=sys.stderr)"]  # fmt: skip
    with HookGateway(agent, echo, env=dict(os.environ), cwd=tmp_path, timeout_s=30) as gateway:
        gateway.freeze_pid = 4242
        done = subprocess.run(relay_command(agent, gateway.socket_path), shell=True,
                              input=b'{"x": "from inside"}', capture_output=True,
                              check=False)  # fmt: skip
    answer = json.loads(done.stdout)
    assert answer == {"decision": "block", "reason": "from inside",
                      "argv": ["--freeze-pid", "4242"]}  # fmt: skip
    assert done.stderr == b"logged\n"
