"""The agent's world: where the programs the agent drives run, and the one seam that starts them.

Every program the agent decides about, ``run_command``'s command, the whole agent CLI under
``donegate exec`` (and any command ``exec`` runs), starts through `launch_argv`, so the rules
of the agent's world live here once:

- the system read-only, the workdir writable, a private ``/tmp``, an empty home;
- folders the task lists in ``sandbox: {read: [...]}`` read-only, and what the caller adds (an
  agent CLI's own state folders writable, its install readable);
- never visible: ``DONEGATE_HOME`` (the key, the store, hook state), a store or key kept
  elsewhere, the task file and its folder, the check modules (``check_path``), a verifier or
  model script;
- its own PID namespace, dying with the gate; the network on unless the task says
  ``network: false``.

Under the ``process`` backend (`donegate.sandbox.resolve`) nothing of this holds: the program
runs as a plain child, as before the sandbox existed; only the environment is still trimmed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from donegate.config import (
    BROKER_ENV,
    DATA_DIR_ENV,
    DB_ENV,
    SERVE_TOKEN_ENV,
    SIGNING_KEY_ENV,
    data_dir,
)
from donegate.harness.signing import key_path
from donegate.harness.spec import PythonCheck, TaskSpec
from donegate.sandbox import Isolation, Jail, command, owned

__all__ = [
    "GATE_ONLY_ENV",
    "AgentWorld",
    "agent_env",
    "agent_world",
    "gate_only",
    "launch_argv",
]

GATE_ONLY_ENV = (SIGNING_KEY_ENV, DB_ENV, BROKER_ENV, SERVE_TOKEN_ENV)
"""Variables only the gate holds (the key, the store's and broker's URLs, the UI's tokens):
never passed into the sandbox."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentWorld:
    """How one agent program is started: the backend, and what it sees under ``sandbox``."""

    isolation: Isolation
    """The backend (``sandbox``: bubblewrap; ``process``: a plain child)."""
    jail: Jail = field(default_factory=Jail)
    """What the program sees under ``sandbox`` (ignored under ``process``)."""

    @property
    def sandboxed(self) -> bool:
        """Whether the program runs in the sandbox."""
        return self.isolation.backend == "sandbox"


def agent_world(
    spec: TaskSpec,
    *,
    workdir: Path,
    isolation: Isolation,
    task_path: Path | str | None = None,
    writable: Iterable[Path] = (),
    readable: Iterable[Path] = (),
    network: bool | None = None,
) -> AgentWorld:
    """The world of `spec`'s agent working in `workdir`.

    `writable` and `readable` add paths for the caller's program (an agent CLI's state folders
    and install); `network` overrides the task's ``sandbox.network`` (exec keeps the CLI's
    network: the CLI needs its model API). Hidden paths that contain a visible one (a task file
    kept in the workdir's parent folder) cannot be masked as a whole: the files themselves are.
    """
    root = workdir.resolve()
    writable, readable = list(writable), list(readable)
    shown = [root, *(_expand(p) for p in spec.sandbox.read), *map(_expand, writable)]
    shown += map(_expand, readable)
    hidden = [h for h in _hidden(spec, task_path) if not any(_contains(h, s) for s in shown)]
    hidden += _task_files(spec, task_path)
    rw = tuple(dict.fromkeys([root, *map(_expand, writable)]))
    ro = [*(_expand(p) for p in spec.sandbox.read), *map(_expand, readable)]
    jail = Jail(
        writable=rw,
        readable=tuple(p for p in dict.fromkeys(ro) if p not in rw),
        hidden=tuple(dict.fromkeys(hidden)),
        network=spec.sandbox.network if network is None else network,
        cwd=root,
    )
    return AgentWorld(isolation=isolation, jail=jail)


def launch_argv(argv: Sequence[str], world: AgentWorld) -> list[str]:
    """Start the agent's program in its world: the argv to run instead of `argv`.

    The one seam for every program the agent drives (``run_command``, an agent CLI under
    ``donegate exec``, ``exec -- COMMAND``): under ``sandbox`` it is bubblewrap's command line
    ending in ``-- argv``; under ``process``, `argv` itself. The caller starts it as it always
    did (``donegate.harness._process.run`` for a bounded command, ``Popen`` for a streamed CLI),
    with the environment from `agent_env`.
    """
    return command(argv, isolation=world.isolation, jail=world.jail)


def agent_env(env: Mapping[str, str], world: AgentWorld) -> dict[str, str]:
    """`env` for a program of the agent: without what only the gate may hold (`gate_only`)."""
    dropped = gate_only(world)
    return {k: v for k, v in env.items() if k not in dropped}


def gate_only(world: AgentWorld) -> frozenset[str]:
    """The variables a program in `world` must not inherit.

    The signing key never passes; under ``sandbox`` neither do the store's and broker's URLs
    (they may carry passwords), the UI's tokens, nor ``DONEGATE_HOME`` (nothing inside needs
    it: the hooks reach the gate through its relay).
    """
    if world.sandboxed:
        return frozenset((*GATE_ONLY_ENV, DATA_DIR_ENV))
    return frozenset((SIGNING_KEY_ENV,))


def _hidden(spec: TaskSpec, task_path: Path | str | None) -> list[Path]:
    """Folders and files the agent must never see (before the visible ones are spared)."""
    user_site = Path.home() / ".local"  # the user site: startup files any Python would run
    out = [data_dir(), key_path(), user_site, *(Path(f) for f in spec.check_path)]
    if task_path is not None:
        out.append(Path(os.path.abspath(task_path)).parent)
    store = _store_file(os.environ.get(DB_ENV, ""))
    if store is not None:
        out.append(store)
    out += owned()  # a store this gate process opened, wherever it sits
    return [_expand(p) for p in out]


def _task_files(spec: TaskSpec, task_path: Path | str | None) -> list[Path]:
    """The task-side files themselves: the task, a script verifier or model, check modules."""
    out: list[Path] = []
    if task_path is not None:
        out.append(Path(os.path.abspath(task_path)))
    for value in (spec.verifier, spec.model):
        if value is not None and value.startswith("script:"):
            out.append(Path(value.removeprefix("script:")))
    for check in spec.checks:
        if isinstance(check, PythonCheck):
            top = check.python.partition(":")[0].partition(".")[0]  # its whole package
            for folder in spec.check_path:
                out += [Path(folder) / f"{top}.py", Path(folder) / top]
    return [_expand(p) for p in out if os.path.lexists(p)]


def _store_file(url: str) -> Path | None:
    """The SQLite file a ``DONEGATE_DB`` value names (a path, or ``sqlite:///PATH``)."""
    if not url:
        return None
    if url.startswith("sqlite:///"):
        return Path(url.removeprefix("sqlite:///").partition("?")[0])
    return None if "://" in url else Path(url)


def _expand(path: Path | str) -> Path:
    return Path(os.path.abspath(os.path.expanduser(path)))


def _contains(outer: Path, inner: Path) -> bool:
    return outer == inner or outer in inner.parents
