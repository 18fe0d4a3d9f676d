"""Every attack class of issue 23 under every path that judges a claim.

The classes are `tests.sandbox.attacks.ATTACKS`: each a task (one check, what it protects) and
what the agent plants so that the check passes on the bug in its own world. The paths are the
places a claim is judged, each a function from a `Case` (the task file, the workdir, the attack)
to an `Outcome` (done or not, and why):

- ``run``: `run_task`, the loop's gate; the model plants at its turn, then claims.
- ``worker``: the embedded `Worker` over a tmp SQLite store, the same model resolved for it.
- ``verify``: a certificate made on the fix; then the bug is put back, the attack planted, and
  `verify_certificate` re-judges.
- ``hook-claude``, ``hook-codex``, ``hook-gemini``: `run_hook` with each CLI's captured payload,
  a SessionStart (the start record), the plant, then the stop.
- ``exec-claude``, ``exec-gemini``: `exec_agent` running the fake CLI
  (tests/harness/agents/fake_agent.py) under the backend this machine resolves (bubblewrap
  here); the agent plants by running ``attacks.py NAME`` from inside its own world, a daemon
  attack forking a detached loop there. Codex is not in this column: the fake CLI speaks no
  app-server JSON-RPC, so exec cannot install Codex's gate for it (test_agent_exec's exit-4
  case); the real CLIs under exec, Codex included, are driven in tests/agents_e2e.

In the run, worker, verify and hook columns the plant is made from this test process, with the
test's rights (it can write the workdir's parent folder and the user's home, which an agent under
the sandbox cannot), and a daemon is a thread of this process that no freeze stops: the gate must
hold even so. Under the hooks the agent is not sandboxed at all, so that is its real world.

Each cell asserts the claim is not done, and, for a class the tamper review or the scan must
flag, that the reason names the file. The control runs each class's task on the fix with no
attack, and it is done on every path: the matrix can fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from donegate.harness.agents import AGENTS, HookOptions, run_hook
from donegate.harness.agents.execute import exec_agent
from donegate.harness.certificate import verify_certificate
from donegate.harness.runner import run_task
from donegate.harness.spec import load_task
from donegate.messages import Turn
from donegate.models.base import ModelRequest
from donegate.models.function import FunctionModel
from donegate.store.sql import open_store
from donegate.worker import Worker, submit
from tests.harness.agents.hookkit import payload
from tests.sandbox import attacks
from tests.sandbox.attacks import ATTACKS, BUG, FIX, Attack
from tests.worker.helpers import text_turn

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="POSIX bytecode and daemons"),
    pytest.mark.usefixtures("plain_check_pytest"),
]

FAKE = Path(__file__).resolve().parents[1] / "harness" / "agents" / "fake_agent.py"
CLAIM = "Fixed add(); the tests pass."
Daemon = Callable[[Callable[[], None]], None]


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What a path decided."""

    done: bool
    why: str


@dataclass(kw_only=True)
class Case:
    """One cell: the attack and its task (`planted` False: the control), the user's home."""

    name: str
    planted: bool
    tmp: Path
    home: Path
    source: str
    daemon: Daemon
    """Starts a daemon's act (the `daemon` fixture of tests/sandbox/conftest.py)."""
    task: Path = field(init=False)
    work: Path = field(init=False)

    def __post_init__(self) -> None:
        self.work = self.tmp / "project" / "work"
        self.task = attacks.prepare(self.work, self.attack, self.source)

    @property
    def attack(self) -> Attack:
        return ATTACKS[self.name]

    def plant(self) -> None:
        """The attack, made from this process; a daemon is a thread until the test ends."""
        if not self.planted:
            return
        self.attack.plant(self.work, self.home)
        if self.attack.act is not None:
            self.daemon(self.attack.act(self.work))


def claimer(case: Case) -> FunctionModel:
    """The agent: at its first turn it plants the attack, and every turn it claims it is done."""
    planted: list[bool] = []

    def answer(request: ModelRequest) -> Turn:
        if not planted:
            case.plant()
            planted.append(True)
        return text_turn(CLAIM)

    return FunctionModel(answer, name="function:attacker")


# -- the paths ---------------------------------------------------------------------------------


def by_run(case: Case) -> Outcome:
    spec = load_task(case.task)
    result = run_task(spec, model=claimer(case), completion_tool=None, task_file=case.task,
                      output_dir=case.tmp / "out")  # fmt: skip
    failed = [f"{c.name}: {c.detail}" for r in result.rounds for c in r.checks if not c.passed]
    return Outcome(done=result.status == "done", why="\n".join([result.reason, *failed]))


def by_worker(case: Case) -> Outcome:
    store = open_store(f"sqlite:///{case.tmp / 'store.db'}")
    try:
        submit(case.task, store, model="function:attacker")
        model = claimer(case)
        worker = Worker(store, model_resolver=lambda name, workdir: model,
                        output_dir=case.tmp / "out")  # fmt: skip
        outcome = worker.run_one()
    finally:
        store.close()
    assert outcome is not None
    return Outcome(done=outcome.status == "done", why=f"{outcome.reason}\n{outcome.report_md}")


def by_verify(case: Case) -> Outcome:
    (case.work / "calc.py").write_text(FIX)
    made = run_task(load_task(case.task), model=FunctionModel(lambda r: text_turn(CLAIM)),
                    completion_tool=None, task_file=case.task,
                    output_dir=case.tmp / "out")  # fmt: skip
    assert made.status == "done" and made.certificate is not None, made.reason
    (case.work / "calc.py").write_text(case.source)
    case.plant()
    ok, problems = verify_certificate(made.certificate)
    return Outcome(done=ok, why="\n".join(problems))


def by_hook(agent: str) -> Callable[[Case], Outcome]:
    def judge(case: Case) -> Outcome:
        options = HookOptions(task=str(case.task))
        start = payload(agent, case.work, hook_event_name="SessionStart")
        run_hook(AGENTS[agent], json.dumps(start), options)
        case.plant()
        out = run_hook(AGENTS[agent], json.dumps(payload(agent, case.work)), options)
        failed = [f"{c.name}: {c.detail}" for c in out.checks if not c.passed]
        return Outcome(done=out.action == "pass",
                       why="\n".join([*out.problems, *failed, json.dumps(out.output)]))  # fmt: skip

    return judge


def by_exec(agent: str) -> Callable[[Case], Outcome]:
    def judge(case: Case) -> Outcome:
        folder = case.tmp / "bin"
        folder.mkdir()
        script = folder / agent
        script.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
        script.chmod(0o755)
        shutil.copy(attacks.__file__, folder / "attacks.py")
        turn: dict[str, object] = {"say": CLAIM}
        if case.planted:  # the agent plants from inside its own world
            turn["run"] = [sys.executable, str(folder / "attacks.py"), case.name, "10"]
        env = {**os.environ, "FAKE_AGENT_TURNS": json.dumps([turn]), "FAKE_AGENT_LOG": "-",
               "HOME": str(case.home)}  # fmt: skip
        lines: list[str] = []
        result = exec_agent(load_task(case.task), case.task, [str(script), "-p", "go"],
                            agent=AGENTS[agent], progress=lines.append, env=env)  # fmt: skip
        failed = [f"{c.name}: {c.detail}" for c in result.checks if not c.passed]
        why = [result.reason, *result.problems, *failed, *lines]
        return Outcome(done=result.status == "done", why="\n".join(why))

    return judge


PATHS: dict[str, Callable[[Case], Outcome]] = {
    "run": by_run,
    "worker": by_worker,
    "verify": by_verify,
    **{f"hook-{a}": by_hook(a) for a in ("claude", "codex", "gemini")},
    **{f"exec-{a}": by_exec(a) for a in ("claude", "gemini")},
}
"""Every path that judges a claim, by name."""
SLOW = {"exec-claude", "exec-gemini"}  # each starts the CLI, its sandbox and a hook per stop


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An isolated data directory, CLI homes and user home; the user's home is yielded."""
    for var, name in (
        ("DONEGATE_HOME", "donegate-home"),
        ("CLAUDE_CONFIG_DIR", "claude-config"),
        ("CODEX_HOME", "codex-home"),
        ("GEMINI_CLI_HOME", "gemini-home"),
    ):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(var, str(tmp_path / name))  # fmt: skip
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    yield home


def ids(names: list[str]) -> list[str]:
    """Test ids without spaces, so a cell can be named on the command line."""
    return [re.sub(r"[^\w.]+", "-", n).strip("-") for n in names]


def cells(names: list[str]) -> list[object]:
    """Every (attack or control, path) cell. The exec columns are slow; of the others the fast
    tier keeps a diagonal, each name under one path and the paths in turn, so a quick run still
    takes every attack and every path through the gate; ``--all`` (CI) runs every cell."""
    fast = [p for p in PATHS if p not in SLOW]
    return [
        pytest.param(
            name,
            path,
            id=f"{ident}-{path}",
            marks=() if path == fast[i % len(fast)] else pytest.mark.slow,
        )
        for i, (name, ident) in enumerate(zip(names, ids(names), strict=True))
        for path in PATHS
    ]


@pytest.mark.parametrize(("attack", "path"), cells(list(ATTACKS)))
def test_no_attack_makes_a_claim_on_the_bug_done(
    attack: str, path: str, tmp_path: Path, env: Path, daemon: Daemon
) -> None:
    case = Case(name=attack, planted=True, tmp=tmp_path, home=env, source=BUG, daemon=daemon)
    outcome = PATHS[path](case)
    assert not outcome.done, f"{attack} under {path} was certified done"
    names = ATTACKS[attack].names
    if names is not None:
        assert names in outcome.why, outcome.why


def controls() -> list[str]:
    """One attack per distinct task: its check, and where its task file sits."""
    seen: dict[str, str] = {}
    for name, attack in ATTACKS.items():
        seen.setdefault(json.dumps([attack.check, attack.beside_task]), name)
    return list(seen.values())


@pytest.mark.parametrize(("task_of", "path"), cells(controls()))
def test_the_same_task_on_the_fix_with_no_attack_is_done(
    task_of: str, path: str, tmp_path: Path, env: Path, daemon: Daemon
) -> None:
    case = Case(name=task_of, planted=False, tmp=tmp_path, home=env, source=FIX, daemon=daemon)
    outcome = PATHS[path](case)
    assert outcome.done, outcome.why
