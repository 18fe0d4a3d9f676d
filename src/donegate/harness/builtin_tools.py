"""The built-in tools, as plain typed methods of a `Workspace` confined to one directory.

The method signatures are a contract (issue 5): ``read_file(path)``, ``write_file(path,
content)``, ``list_dir(path=".")``, ``run_command(command, timeout=60)``. Their docstrings are
what the model reads, so they speak to the model.

Confinement covers paths: any path that resolves outside the root (``..``, an absolute path, a
symlink pointing out) raises `PermissionError`. `run_command` never uses a shell, so ``;``,
``|``, ``$(...)`` in a model's argument are plain characters. The program it names runs in the
agent's world (`donegate.harness.world`): under the ``sandbox`` backend the system read-only,
only the workdir writable, donegate's state, key and task files absent, its own PID namespace,
no network when the task says so; under ``process`` it runs with the harness's user and network.

Input is bounded too: `read_file` returns at most ``max_read_bytes`` and `run_command` runs at
most ``max_command_timeout`` seconds whatever the model asks (both from the task), and the
program and everything it starts are killed when it returns (`donegate.harness._process`).
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from donegate.errors import UserError
from donegate.harness import _process
from donegate.harness._confine import confine
from donegate.harness.world import AgentWorld, gate_only, launch_argv
from donegate.tools import Tool

__all__ = ["BUILTIN_TOOLS", "COMMAND_OUTPUT_CAP", "Workspace", "confine", "workspace_tool"]

BUILTIN_TOOLS = ("read_file", "write_file", "list_dir", "run_command")
"""The `Workspace` methods a task may list as tools."""

COMMAND_OUTPUT_CAP = 16 * 1024
"""Bytes of `run_command` output returned to the model (head and tail, with a marker)."""


class Workspace:
    """A directory the agent may read, write, list and run commands in, and nothing outside."""

    def __init__(
        self,
        root: Path | str,
        *,
        max_read_bytes: int = 256 * 1024,
        max_command_timeout: float = 600,
        protected: Callable[[Path], bool] | None = None,
        world: AgentWorld | None = None,
    ) -> None:
        resolved = Path(root).resolve()
        if not resolved.is_dir():
            raise UserError(f"workspace root is not a directory: {root}")
        self.root = resolved
        """The resolved directory every path is confined to."""
        self.max_read_bytes = max_read_bytes
        """Bytes `read_file` returns at most (the task's ``max_read_bytes``)."""
        self.max_command_timeout = max_command_timeout
        """Seconds `run_command` runs at most (the task's ``max_command_timeout``)."""
        self.protected = protected
        """Whether an absolute path is protected (``write_file`` refuses it)."""
        self.world = world
        """Where `run_command`'s program runs (None: a plain child, as under ``process``)."""

    def read_file(self, path: str) -> str:
        """Read a text file in the workspace; a very long file is cut, and the result says so.

        Args:
            path: File path relative to the workspace root.
        """
        target = self._path(path)
        if target.is_dir():
            raise IsADirectoryError(f"{self._rel(target)} is a directory; use list_dir")
        if not target.is_file():
            raise FileNotFoundError(f"no such file: {self._rel(target)}")
        limit = self.max_read_bytes
        with target.open("rb") as file:  # never more than the limit in memory
            data = file.read(limit + 1)
            size = max(len(data), os.fstat(file.fileno()).st_size)
        if len(data) <= limit:
            return data.decode("utf-8", errors="replace")
        note = (
            f"\n[truncated: this is the first part of {size} bytes; read_file returns at most"
            f" {limit} bytes. Use run_command (e.g. sed -n 2000,2100p FILE) to see the rest.]"
        )
        keep = data[: max(0, limit - len(note.encode()))]
        return keep.decode("utf-8", errors="ignore") + note

    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a text file in the workspace, creating parent directories.

        Args:
            path: File path relative to the workspace root.
            content: The complete new content of the file.
        """
        target = self._path(path)
        if self.protected is not None and any(
            self.protected(p) for p in (target, Path(os.path.normpath(self.root / path)))
        ):
            raise PermissionError(f"{self._rel(target)} is protected: the task forbids changing it")
        if target.is_dir():
            raise IsADirectoryError(f"{self._rel(target)} is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8")
        target.write_bytes(data)
        return f"wrote {len(data)} bytes to {self._rel(target)}"

    def list_dir(self, path: str = ".") -> str:
        """List a directory in the workspace, one entry per line; directories end with ``/``.

        Args:
            path: Directory path relative to the workspace root.
        """
        target = self._path(path)
        if not target.exists():
            raise FileNotFoundError(f"no such directory: {self._rel(target)}")
        if not target.is_dir():
            raise NotADirectoryError(f"{self._rel(target)} is a file; use read_file")
        entries = sorted(e.name + ("/" if e.is_dir() else "") for e in target.iterdir())
        return "\n".join(entries) if entries else "(empty directory)"

    def run_command(self, command: str, timeout: int = 60) -> str:
        """Run a program in the workspace root and return its exit code and output.

        The command is split into arguments like a shell would, but no shell runs it: pipes,
        redirects, ``;`` and ``$(...)`` are passed as plain arguments.

        Args:
            command: The program and its arguments, e.g. ``pytest -q tests/test_app.py``.
            timeout: Seconds before the program is killed (the task sets a maximum). Processes
                it leaves in the background are killed when it returns.
        """
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ValueError(f"cannot split the command: {exc}") from None
        if not argv:
            raise ValueError("the command is empty")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        limit = min(timeout, self.max_command_timeout)
        try:
            done = self._run(argv, limit)
        except FileNotFoundError:
            raise FileNotFoundError(f"command not found: {argv[0]}") from None
        notes = []
        if limit < timeout:
            notes.append(
                f"[the timeout was capped at {limit:g}s, the task's max_command_timeout;"
                f" {timeout}s was asked]"
            )
        if done.timed_out:
            first = f"timed out after {limit:g}s; the process was killed"
        else:
            first = f"exit code {done.returncode}"
            if done.killed:
                notes.append(f"[{done.killed} background process(es) it left were killed]")
        tail = "".join(f"\n{n}" for n in notes)
        return f"{first}\n{_cap(done.output)}{tail}"

    def _run(self, argv: list[str], limit: float) -> _process.Finished:
        world = self.world
        if world is None or not world.sandboxed:
            return _process.run(argv, cwd=self.root, timeout=limit)
        program = argv[0]
        found = (self.root / program).exists() if "/" in program else shutil.which(program)
        if not found:  # bwrap would only say so in the output; say it as a plain child does
            raise FileNotFoundError(program)
        argv = launch_argv(argv, world)
        return _process.run(argv, cwd=self.root, timeout=limit, drop=gate_only(world))

    def _path(self, path: str) -> Path:
        return confine(self.root, path)

    def _rel(self, target: Path) -> str:
        rel = target.relative_to(self.root).as_posix()
        return rel if rel != "." else "./"


def _cap(output: _process.Output) -> str:
    """Decode output, keeping the head and tail of anything over `COMMAND_OUTPUT_CAP`."""
    if output.total <= COMMAND_OUTPUT_CAP:
        return output.head.decode("utf-8", errors="replace")
    half = (COMMAND_OUTPUT_CAP - 64) // 2  # room for the marker
    omitted = output.total - 2 * half
    head = output.head[:half].decode("utf-8", errors="ignore")
    tail = output.tail[-half:].decode("utf-8", errors="ignore")
    return f"{head}\n[... {omitted} bytes omitted ...]\n{tail}"


@functools.cache
def _template(name: str) -> Tool:
    """The tool for one `Workspace` method, its schema computed once per process (what
    `Tool.from_function` derives from the signature does not depend on the workspace)."""
    unbound = object.__new__(Workspace)  # only the bound signature and docstring are read
    return Tool.from_function(getattr(unbound, name), name=name)


def workspace_tool(
    workspace: Workspace, name: str, *, side_effect: bool = False, idempotent: bool = False
) -> Tool:
    """The built-in tool `name` bound to `workspace` (its schema shared, never recomputed)."""
    if name not in BUILTIN_TOOLS:
        raise UserError(f"no built-in tool {name!r}")
    return replace(
        _template(name),
        function=getattr(workspace, name),
        side_effect=side_effect,
        idempotent=idempotent,
    )
