"""Where a ``python:`` check imports its module from, and the files that import would run.

Kept apart from `donegate.harness.checks` (which re-exports `check_sources`): protect digests
these files when they sit in the workdir, so the agent cannot rewrite a check module there.
"""

from __future__ import annotations

import functools
import importlib.machinery
import json
import sys
from pathlib import Path

from donegate.harness import _process
from donegate.harness.spec import PythonCheck, TaskSpec

__all__ = ["check_sources"]


def _search_path(spec: PythonCheck, root: Path) -> list[str]:
    """Where a check imports from: its task's ``check_path``, else ``sys.path`` minus `root`."""
    if spec.search_path is not None:
        return list(spec.search_path)
    folders = (Path(entry or ".").resolve() for entry in sys.path)
    return list(dict.fromkeys(str(f) for f in folders if not f.is_relative_to(root)))


def check_sources(spec: TaskSpec, *, workdir: Path | None = None) -> list[Path]:
    """The files the task's ``python:`` checks would import their modules from.

    For each check: its module's file and the ``__init__.py`` of each package above it, as the
    check's interpreter finds them (the installed packages, then the check's search path).
    Modules the check module itself imports are not followed, and a module that cannot be
    found adds nothing (running the check reports it). For digesting check code that sits
    inside the workdir.
    """
    root = Path(workdir if workdir is not None else spec.workdir or Path.cwd()).resolve()
    found: list[Path] = []
    for check in spec.checks:
        if isinstance(check, PythonCheck):
            path = _child_path() + _search_path(check, root)  # the order the child searches
            found += _module_files(check.python.partition(":")[0], path)
    return list(dict.fromkeys(found))


@functools.cache
def _child_path() -> list[str]:
    """The ``sys.path`` a ``python -I`` child starts with: the stdlib and installed packages."""
    code = "import json, sys; print(json.dumps(sys.path))"
    try:
        done = _process.run([sys.executable, "-I", "-c", code], cwd=Path("/"), timeout=30)
        return [str(p) for p in json.loads(done.output.head)]
    except (OSError, ValueError):  # no usable interpreter: the checks will say so
        return []


def _module_files(module: str, path: list[str]) -> list[Path]:
    """The files importing `module` (dotted) from `path` would execute, outermost first."""
    files: list[Path] = []
    search = path
    for part in module.split("."):
        found = importlib.machinery.PathFinder.find_spec(part, search)
        if found is None:
            break
        if found.has_location and found.origin:
            files.append(Path(found.origin).resolve())
        search = list(found.submodule_search_locations or [])
        if not search:
            break
    return files
