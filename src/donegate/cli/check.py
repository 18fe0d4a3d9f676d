"""``donegate check TASK`` (or ``validate``): every problem in a task file at once, running nothing.

Each problem is one line, ``FILE: field: message``: every field the task format refuses, then
what only shows when the task runs: a ``python:`` check or an imported tool whose module cannot
be found, a ``run:`` check whose command is not on PATH, a ``script:`` model whose file is
missing or invalid, a workdir that is not a folder. Nothing is imported, run or sent: modules
are looked up, not imported, and a model client is not called.

Exit codes: 0 the task is fine (``ok: ...`` on stdout), 2 it is not (the problems on stderr,
then their count when there are several).
"""

from __future__ import annotations

import importlib.machinery
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from donegate._files import load_data
from donegate.cli._app import app
from donegate.errors import ScriptError, UserError
from donegate.harness.runner import COMPLETION_TOOL
from donegate.harness.spec import BUILTIN_TOOLS, TaskSpecError, load_task, task_problems
from donegate.models.infer import infer_model

_IMPORT_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


@click.command("check")
@click.argument("task", type=click.Path(dir_okay=False))
def check_command(task: str) -> None:
    """Report every problem in TASK (a task file) without running anything."""
    problems, warnings = find_problems(task)
    for line in warnings:
        click.echo(f"{task}: warning: {line}", err=True)
    for line in problems:
        click.echo(" ".join(line.split()), err=True)
    if len(problems) > 1:
        click.echo(f"{task}: {len(problems)} problems", err=True)
    if problems:
        sys.exit(2)
    spec = load_task(task)
    s = "" if len(spec.checks) == 1 else "s"
    model = f", model {spec.model}" if spec.model else ", no model (pass --model to run)"
    click.echo(f"ok: {task}: task {spec.id}, {len(spec.checks)} check{s}{model}")


app.add_command(check_command)
app.add_command(
    click.Command(
        "validate",
        callback=check_command.callback,
        params=check_command.params,
        help="The same as `donegate check TASK`: report every problem in TASK, running nothing.",
    )
)


def find_problems(task: str) -> tuple[list[str], list[str]]:
    """The task file's problems (``FILE: field: message``) and warnings (``field: message``)."""
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
        _model(data, field, base=base, task=task, problems=problems, warnings=warnings)
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
            _command(check["run"], f"{where}.run", problems)
    for i, tool in enumerate(_list(data.get("tools"))):
        module = _module_of(tool.get("import")) if isinstance(tool, dict) else None
        search = [*_installed(), *([str(workdir)] if workdir else [])]
        if module and not _findable(module, search):
            problems.append(
                f"{task}: tools[{i}].import: no module named {module!r} in the installed "
                "packages or the workdir"
            )
    return problems, warnings


def _plain(problem: TaskSpecError, data: dict[str, Any]) -> str:
    """The problem's line; a tool name that is no built-in says so in those words."""
    found = re.fullmatch(r"tools\[(\d+)\]", problem.field or "")
    tools = _list(data.get("tools"))
    if found and int(found[1]) < len(tools) and isinstance(tools[int(found[1])], str):
        name = tools[int(found[1])]
        builtins = ", ".join(BUILTIN_TOOLS)
        return f"{_source(problem)}: {problem.field}: unknown tool {name!r}; built-ins: {builtins}"
    return str(problem)


def _source(problem: TaskSpecError) -> str:
    return problem.source or "task"


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
    data: dict[str, Any],
    field: str,
    *,
    base: Path,
    task: str,
    problems: list[str],
    warnings: list[str],
) -> None:
    value = data.get(field)
    if not isinstance(value, str) or ":" not in value:
        return  # absent, or refused above with the field's shape
    if not value.startswith("script:"):
        try:
            infer_model(value)  # builds a client; calls nothing
        except UserError as exc:
            if str(exc).startswith("unknown model"):
                problems.append(f"{task}: {field}: {exc}")
            else:  # a key or an extra missing here may be present where the task runs
                warnings.append(f"{field}: {exc}")
        return
    from donegate.testing.script import check_for_task, load_script

    path = base / value.removeprefix("script:")
    if not path.is_file():
        problems.append(f"{task}: {field}: no such script file: {path}")
        return
    try:
        script = load_script(path)
        if field == "model" and isinstance(data.get("prompt"), str):
            tools = _list(data.get("tools", list(BUILTIN_TOOLS)))
            names = [t if isinstance(t, str) else str(t.get("name", "")) for t in tools]
            warnings += check_for_task(
                script, prompt=data["prompt"], tools=[*names, COMPLETION_TOOL]
            )
    except ScriptError as exc:
        problems.append(f"{task}: {field}: {exc}")


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


def _command(value: Any, where: str, problems: list[str]) -> None:
    try:
        argv = shlex.split(value) if isinstance(value, str) else value
    except ValueError:
        return  # refused above
    if not isinstance(argv, list) or not argv or not isinstance(argv[0], str):
        return
    program = argv[0]
    # a path (``./run.sh``) may be one the agent writes; a bare name must be on PATH now
    if "/" not in program and shutil.which(program) is None:
        problems.append(f"{where}: command not found on PATH: {program}")
