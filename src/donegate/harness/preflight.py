"""Preflight: every problem a task file has, and whether the gate can write its results, found
before any model is called or any agent started.

One code path for every command that runs a task: ``check`` prints what `task_file_problems`
finds; ``run``, ``submit``, ``exec`` and ``hook install`` refuse a task it finds anything in
(`donegate.cli.check.refuse_bad_task`), so a typo'd ``python:`` module or a ``run:`` program
missing from PATH never spends a model call. Problems are looked up, never run: modules are
found without being imported, and a model client is built but not called.

``machine=False`` skips what depends on the machine the command runs on (programs on PATH), for
a task that runs somewhere else. `check_outputs` is the second half: the data directory and the
output folder take a probe file, and the signing key loads, before the first model call, so a
run is never paid for and then thrown away for want of a place to put its certificate.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import secrets
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from donegate._files import load_data
from donegate.config import data_dir
from donegate.errors import UserError
from donegate.harness.signing import signing_key
from donegate.harness.spec import BUILTIN_TOOLS, TaskSpecError, task_problems
from donegate.models.infer import infer_model

__all__ = [
    "AGENT_CLI_REFUSED",
    "AGENT_CLI_UNUSED",
    "SHELL_TOKENS",
    "ScriptCheck",
    "check_outputs",
    "mode_problems",
    "shell_syntax",
    "task_file_problems",
]

ScriptCheck = Callable[[Path, str, dict[str, Any]], tuple[list[str], list[str]]]
"""Checks a ``script:FILE`` model (path, field, task data) -> (problems, warnings); the CLI
supplies it (script files are read by `donegate.testing`, which the harness does not import)."""

SHELL_TOKENS = frozenset({"&&", "||", "|", ";", "&", ">", ">>", "<", "2>", "2>&1", "&>", "|&"})
"""Words a shell reads as operators; a ``run:`` check has no shell, so they would be arguments."""

_IMPORT_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def task_file_problems(
    task: str | Path, *, machine: bool = True, scripts: ScriptCheck | None = None
) -> tuple[list[str], list[str]]:
    """The task file's problems (``FILE: field: message``) and warnings (``field: message``).

    Every problem at once: the task format's, then what only shows when the task runs.
    `machine` False skips the look at this machine's PATH.
    """
    task = str(task)
    try:
        data = load_data(Path(task), source=task, what="task file", error=_file_error)
    except TaskSpecError as exc:
        return [str(exc)], []
    if not isinstance(data, dict):
        return [f"{task}: expected a mapping, got {type(data).__name__}"], []
    problems = [_plain(p, data) for p in task_problems(data, source=task)]
    warnings: list[str] = []
    base = Path(task).resolve().parent
    workdir = _workdir(data, base, task, problems)
    for field in ("model", "verifier"):
        found = _model(data, field, base=base, task=task, scripts=scripts)
        problems += found[0]
        warnings += found[1]
    check_path = [str(base), *(str(base / f) for f in _strings(data.get("check_path")))]
    for i, check in enumerate(_list(data.get("checks"))):
        if not isinstance(check, dict):
            continue
        where = f"{task}: checks[{i}]"
        module = _module_of(check.get("python"))
        if module and not _findable(module, [*check_path, *_installed()]):
            problems.append(
                f"{where}.python: no module named {module!r} in the task's folder, its "
                "check_path or the installed packages"
            )
        if "run" in check:
            problems += _command(check["run"], f"{where}.run", machine=machine)
        tests = check.get("tests")
        runner = tests.get("runner") if isinstance(tests, dict) else None
        if runner == "pytest" and not _findable("pytest", _installed()):
            problems.append(f"{where}.tests.runner: pytest is not installed for {sys.executable}")
    for i, tool in enumerate(_list(data.get("tools"))):
        module = _module_of(tool.get("import")) if isinstance(tool, dict) else None
        search = [*_installed(), *([str(workdir)] if workdir else [])]
        if module and not _findable(module, search):
            problems.append(
                f"{task}: tools[{i}].import: no module named {module!r} in the installed "
                "packages or the workdir"
            )
    return problems, warnings


def shell_syntax(argv: list[str]) -> str | None:
    """The first shell operator in `argv` (a ``run:`` command, which no shell reads), if any."""
    for word in argv:
        if word in SHELL_TOKENS or (len(word) > 1 and word.endswith(";")):
            return word
        if word.startswith("$(") or word.startswith("`"):
            return word[:2] if word.startswith("$(") else "`"
    return None


def check_outputs(output_dir: Path | None = None) -> None:
    """Refuse (`UserError`) unless the data directory and `output_dir` take a file and the
    signing key the gate signs with loads: checked before the first model call."""
    home = data_dir()
    for folder, what in ((home, "the data directory (DONEGATE_HOME)"), (output_dir, "")):
        if folder is None:
            continue
        _probe(folder, what or "the output folder")
    signing_key(create=True)


_WRITABLE: set[Path] = set()
"""Folders that took a probe file in this process: a worker runs a task after task into the
same folder, and file creation is most of what writing a certificate costs."""


def _probe(folder: Path, what: str) -> None:
    """Create `folder` if needed and write and remove one small file in it (once a process)."""
    if folder in _WRITABLE:
        return
    probe = folder / f".donegate-probe-{secrets.token_hex(4)}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        probe.unlink()
        _WRITABLE.add(folder)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UserError(f"{what} {folder} cannot be written ({reason}); nothing was run") from None


def _plain(problem: TaskSpecError, data: dict[str, Any]) -> str:
    """The problem's line; a tool name that is no built-in says so in those words."""
    found = re.fullmatch(r"tools\[(\d+)\]", problem.field or "")
    tools = _list(data.get("tools"))
    if found and int(found[1]) < len(tools) and isinstance(tools[int(found[1])], str):
        name = tools[int(found[1])]
        builtins = ", ".join(BUILTIN_TOOLS)
        source = problem.source or "task"
        return f"{source}: {problem.field}: unknown tool {name!r}; built-ins: {builtins}"
    return str(problem)


def _file_error(message: str, *, source: str | None, field: str | None = None) -> TaskSpecError:
    return TaskSpecError(f"{message} ({field})" if field else message, source=source)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    return [v for v in _list(value) if isinstance(v, str)]


def _workdir(data: dict[str, Any], base: Path, task: str, problems: list[str]) -> Path | None:
    value = data.get("workdir")
    if value is None:
        return Path.cwd()
    if not isinstance(value, str):
        return None
    path = base / value
    if not path.is_dir():
        problems.append(f"{task}: workdir: not a folder: {path}")
        return None
    return path


def _model(
    data: dict[str, Any], field: str, *, base: Path, task: str, scripts: ScriptCheck | None
) -> tuple[list[str], list[str]]:
    value = data.get(field)
    if not isinstance(value, str) or ":" not in value:
        return [], []  # absent, or refused above with the field's shape
    if not value.startswith("script:"):
        try:
            infer_model(value)  # builds a client; calls nothing
        except UserError as exc:
            if str(exc).startswith("unknown model"):
                return [f"{task}: {field}: {exc}"], []
            return [], [f"{field}: {exc}"]  # a key or an extra may be present where it runs
        return [], []
    path = base / value.removeprefix("script:")
    if not path.is_file():
        return [f"{task}: {field}: no such script file: {path}"], []
    if scripts is None:
        return [], []
    found, warnings = scripts(path, field, data)
    return [f"{task}: {field}: {p}" for p in found], warnings


def _module_of(value: Any) -> str | None:
    """The module of a well-formed ``module:function`` (a malformed one is refused above)."""
    if isinstance(value, str) and _IMPORT_PATH.fullmatch(value):
        return value.partition(":")[0]
    return None


def _installed() -> list[str]:
    """Where the installed packages and the stdlib are (what a check's ``python -I`` sees)."""
    return [p for p in sys.path if p and Path(p).is_absolute()]


def _findable(module: str, path: list[str]) -> bool:
    """Whether `module` (dotted) can be found on `path`, without importing anything."""
    parts = module.split(".")
    if parts[0] in sys.builtin_module_names:
        return True
    search = path
    for i, part in enumerate(parts):
        found = importlib.machinery.PathFinder.find_spec(part, search)
        if found is None:
            return False
        search = list(found.submodule_search_locations or [])
        if not search and i < len(parts) - 1:
            return False  # a plain module has no submodules
    return True


def _command(value: Any, where: str, *, machine: bool) -> list[str]:
    try:
        argv = shlex.split(value) if isinstance(value, str) else value
    except ValueError:
        return []  # refused above
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return []
    problems = []
    token = shell_syntax(argv) if isinstance(value, str) else None
    if token is not None:
        problems.append(
            f"{where}: shell syntax {token!r} in a command run without a shell; "
            f"write it as sh -c '...' or split it into several checks"
        )
    program = argv[0]
    # a path (``./run.sh``) may be one the agent writes; a bare name must be on PATH now
    if machine and "/" not in program and shutil.which(program) is None:
        problems.append(f"{where}: command not found on PATH: {program}")
    return problems


AGENT_CLI_REFUSED = {
    "verifier": "a hook has no verifier call; the checks and the agent's todo items decide",
}
"""Gate fields ``exec`` and the hooks cannot honour: a task setting one is refused."""
AGENT_CLI_UNUSED = ("model", "system", "tools", "max_steps", "max_read_bytes",
                    "max_command_timeout")  # fmt: skip
"""Fields for ``run``'s own agent; an agent CLI brings its own model, prompt and tools."""


def mode_problems(task: str | Path, mode: str) -> tuple[list[str], list[str]]:
    """What `mode` (``exec``, ``hook install``) cannot honour in the task file: a gate field
    is a problem (``FILE: field: not honoured by MODE: why``), a field for ``run``'s agent a
    warning. Unreadable files are `task_file_problems`' to report."""
    try:
        data = load_data(Path(task), source=str(task), what="task file", error=_file_error)
    except TaskSpecError:
        return [], []
    if not isinstance(data, dict):
        return [], []
    problems = [
        f"{task}: {field}: {mode} cannot honour it ({why}); remove it, or use donegate run"
        for field, why in AGENT_CLI_REFUSED.items()
        if data.get(field) is not None
    ]
    warnings = [
        f"{field}: not used by {mode} (the agent CLI brings its own)"
        for field in AGENT_CLI_UNUSED
        if field in data
    ]
    return problems, warnings
