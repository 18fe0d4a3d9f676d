"""The agent's world: what ``run_command``'s program can reach of the gate, from inside.

The program (`probe.py`, copied into the workdir as an agent would write it) tries to read
``DONEGATE_HOME``, the signing key, the task's folder and its check module, the gate's
``/proc/PID/environ`` and memory, to write site-packages and the user site under ``~/.local``,
and to signal the gate (this test process). Under the sandbox every attempt fails, and nothing
lands outside. Under ``process`` (today's child processes) the same probe gets through, which
is what the sandbox is for.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from donegate.harness.builtin_tools import Workspace
from donegate.harness.spec import load_task
from donegate.harness.world import AgentWorld, agent_env, agent_world, launch_argv
from donegate.sandbox import Isolation, resolve

PROBE = Path(__file__).resolve().with_name("probe.py")


def sandbox() -> Isolation:
    try:
        return resolve("sandbox")
    except Exception as exc:  # no bwrap, or the kernel refuses namespaces
        pytest.skip(f"the sandbox is not available here: {exc}")


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A gate's world: its data folder and key, a task with a check module, a home, a workdir."""
    home = tmp_path / "home"
    (home / ".local").mkdir(parents=True)
    data = tmp_path / "donegate-home"
    data.mkdir()
    key = data / "signing.key"
    key.write_text("ab" * 32)
    key.chmod(0o600)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "checks.py").write_text("def ok(workdir):\n    return True\n")
    task = tasks / "task.yaml"
    spec = {"id": "t", "prompt": "p", "workdir": "../work", "checks": [{"python": "checks:ok"}]}
    task.write_text(yaml.safe_dump(spec))
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(PROBE, work / "probe.py")
    monkeypatch.setenv("DONEGATE_HOME", str(data))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GATE_SECRET", "gate-only")  # in the gate's /proc/PID/environ
    user_site = home / ".local" / "lib" / "python3" / "site-packages" / "usercustomize.py"
    purelib = Path(sysconfig.get_paths()["purelib"]) / "donegate_planted.pth"
    targets = {
        "read": [str(data), str(key), str(tasks), str(task), str(tasks / "checks.py")],
        "write": [str(purelib), str(user_site), str(Path(site.USER_SITE or user_site) / "x.pth")],
        "gate": os.getpid(),
    }
    yield {"task": task, "work": work, "targets": targets, "planted": [purelib, user_site]}
    purelib.unlink(missing_ok=True)  # only there when the sandbox failed: never leave it


def probe(workspace: Workspace, targets: dict[str, Any]) -> list[dict[str, Any]]:
    out = workspace.run_command(f"{sys.executable} -I probe.py '{json.dumps(targets)}'")
    line = next((x for x in out.splitlines() if x.startswith("PROBE-RESULT ")), None)
    assert line is not None, out
    results: list[dict[str, Any]] = json.loads(line.removeprefix("PROBE-RESULT "))
    return results


def test_run_command_in_the_sandbox_reaches_nothing_of_the_gate(world: dict[str, Any]) -> None:
    spec = load_task(world["task"])
    agent = agent_world(spec, workdir=world["work"], isolation=sandbox(), task_path=world["task"])
    workspace = Workspace(world["work"], world=agent)
    results = probe(workspace, world["targets"])
    assert len(results) == 12
    got = [r for r in results if r["ok"]]
    assert got == [], json.dumps(got, indent=1)
    for planted in world["planted"]:
        assert not planted.exists()
    # the workdir itself is the agent's: it writes there, and the gate sees it
    out = workspace.run_command(f"{sys.executable} -I -c \"open('made.txt', 'w').write('x')\"")
    assert out.startswith("exit code 0"), out
    assert (world["work"] / "made.txt").read_text() == "x"


def test_the_same_probe_gets_through_without_the_sandbox(world: dict[str, Any]) -> None:
    spec = load_task(world["task"])
    process = AgentWorld(isolation=Isolation(backend="process", version=""))
    agent = agent_world(spec, workdir=world["work"], isolation=process.isolation)
    results = {r["what"]: r["ok"] for r in probe(Workspace(world["work"], world=agent), {
        "read": world["targets"]["read"][:2], "gate": os.getpid()})}  # fmt: skip
    del results[f"open /proc/{os.getpid()}/mem"]  # offset 0 is never mapped: EIO either way
    assert all(results.values()), results  # what the sandbox takes away


def test_network_false_cuts_the_network(tmp_path: Path) -> None:
    task = tmp_path / "task.yaml"
    task.write_text(yaml.safe_dump({"id": "t", "prompt": "p", "closure": "human",
                                    "sandbox": {"network": False}}))  # fmt: skip
    work = tmp_path / "work"
    work.mkdir()
    spec = load_task(task)
    agent = agent_world(spec, workdir=work, isolation=sandbox())
    code = "import socket; print(len(socket.if_nameindex()))"
    out = Workspace(work, world=agent).run_command(f'{sys.executable} -I -c "{code}"')
    assert out.splitlines()[:2] == ["exit code 0", "1"], out  # only its own loopback
    shared = agent_world(spec, workdir=work, isolation=sandbox(), network=True)
    out = Workspace(work, world=shared).run_command(f'{sys.executable} -I -c "{code}"')
    assert out.splitlines()[0] == "exit code 0" and out.splitlines()[1] != "1", out


def test_sandbox_read_shows_a_listed_folder_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".cargo").mkdir(parents=True)
    (home / ".cargo" / "config.toml").write_text("x")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id").write_text("private")
    monkeypatch.setenv("HOME", str(home))
    task = tmp_path / "task.yaml"
    task.write_text(yaml.safe_dump({"id": "t", "prompt": "p", "closure": "human",
                                    "sandbox": {"read": ["~/.cargo"]}}))  # fmt: skip
    work = tmp_path / "work"
    work.mkdir()
    agent = agent_world(load_task(task), workdir=work, isolation=sandbox())
    workspace = Workspace(work, world=agent)
    assert workspace.run_command(f"cat {home}/.cargo/config.toml").splitlines()[:2] == [
        "exit code 0", "x"]  # fmt: skip
    assert workspace.run_command(f"cat {home}/.ssh/id").startswith("exit code 1")
    assert workspace.run_command(f"touch {home}/.cargo/new").startswith("exit code 1")


def test_the_gate_only_variables_stay_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"DONEGATE_SIGNING_KEY": "k", "DONEGATE_DB": "postgresql://u:pw@h/db", "PATH": "/bin",
           "DONEGATE_HOME": "/d"}  # fmt: skip
    inside = AgentWorld(isolation=Isolation(backend="sandbox", version="bubblewrap"))
    outside = AgentWorld(isolation=Isolation(backend="process", version=""))
    assert agent_env(env, inside) == {"PATH": "/bin"}
    assert agent_env(env, outside) == {"DONEGATE_DB": "postgresql://u:pw@h/db", "PATH": "/bin",
                                       "DONEGATE_HOME": "/d"}  # fmt: skip
    assert launch_argv(["true"], outside) == ["true"]
