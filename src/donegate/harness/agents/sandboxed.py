"""The agent CLI's world under ``donegate exec``: the task's agent world plus what a CLI needs.

`donegate.harness.world` makes the world of every program the agent drives; a whole agent CLI
needs three things more: its own state folders writable (``~/.claude``, ``~/.codex``,
``~/.gemini`` or their env homes, `AgentCLI.state_folders`, made when missing so the gate can
read what the CLI keeps there), its install readable (the npm package and the node runtime,
when they are not in the system folders), and the files exec wrote for this run (a settings
file, the hook relay and its socket). Its network stays on: the CLI needs its model API.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from donegate.harness.agents.base import AgentCLI
from donegate.harness.spec import TaskSpec
from donegate.harness.world import AgentWorld, agent_world
from donegate.sandbox import Isolation

__all__ = ["cli_world", "install_roots"]

_SYSTEM = ("/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib64")


def cli_world(
    spec: TaskSpec,
    agent: AgentCLI,
    *,
    root: Path,
    task_path: Path,
    isolation: Isolation,
    envs: Iterable[Mapping[str, str]],
    executable: str,
    readable: Iterable[Path] = (),
) -> AgentWorld:
    """The world `agent` (started as `executable`) runs in for `spec` in `root`.

    `envs` are the environments whose state folders count (the user's, and the run's own when
    exec points the CLI at a config home of the run); `readable` adds this run's files.
    """
    folders: dict[str, Path] = {}
    for env in envs:
        for folder in agent.state_folders(env):
            folders.setdefault(str(folder), folder)
    if isolation.backend == "sandbox":
        for folder in folders.values():
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = next((e["PATH"] for e in envs if e.get("PATH")), None)
    return agent_world(
        spec,
        workdir=root,
        isolation=isolation,
        task_path=task_path,
        writable=folders.values(),
        readable=[*install_roots(executable, path=path), *readable],
        network=True,
    )


def install_roots(executable: str, *, path: str | None = None) -> list[Path]:
    """The folders an agent CLI needs to start, outside the system folders: its package (the
    folder holding its ``node_modules``, or the executable's own folder) and node's prefix."""
    out: list[Path] = [Path(os.path.abspath(executable)).parent]  # where it is called from
    real = Path(os.path.realpath(executable))
    parts = real.parts
    if "node_modules" in parts:  # an npm package: the folder holding node_modules
        out.append(Path(*parts[: parts.index("node_modules")]))
    else:
        out.append(real.parent)
    node = shutil.which("node", path=path)
    if node is not None:
        runtime = Path(os.path.realpath(node)).parent
        prefix = runtime.parent if runtime.name == "bin" else runtime  # bin/ and lib/
        out.append(runtime if prefix in (Path.home().resolve(), Path("/")) else prefix)
    return [p for p in dict.fromkeys(out) if not _system(p)]


def _system(path: Path) -> bool:
    text = str(path)
    return text == "/" or any(text == s or text.startswith(s + "/") for s in _SYSTEM)
