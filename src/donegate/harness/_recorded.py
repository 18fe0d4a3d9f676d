"""What a certificate records so ``donegate verify CERT`` re-runs every check kind with no flags.

A ``python:`` check imports its module from the task's ``check_path`` (the task file's folder
first), which a certificate on its own does not know. So a certificate records the task file
(path and digest), the ``check_path`` and the check modules' files found on it (path and
digest). `verify` binds the certified checks to that path, and before it runs anything it
compares those files: one gone or changed is named, with the hint to pass ``--task`` (a moved
or edited task is re-run from the task file, once its checks are shown equal to the certified
ones). None of this touches the signature or digest check, which holds without any file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from donegate.harness.checks import check_sources
from donegate.harness.spec import CheckSpec, PythonCheck, TaskSpec
from donegate.records.certificate import Certificate, RecordedFile

__all__ = ["bind_check_path", "recorded_sources", "source_problems"]


def recorded_sources(spec: TaskSpec, root: Path, task_file: str | Path | None) -> dict[str, Any]:
    """The certificate fields naming the task file and the check code (only those that apply)."""
    out: dict[str, Any] = {}
    if task_file is not None:
        found = _record(Path(task_file))
        if found is not None:
            out["task_file"] = found
    if any(isinstance(c, PythonCheck) for c in spec.checks) and spec.check_path:
        folders = [Path(f).resolve() for f in spec.check_path]
        out["check_path"] = tuple(str(f) for f in folders)
        files = [
            f
            for f in check_sources(spec, workdir=root)
            if any(f.is_relative_to(folder) for folder in folders)
        ]
        out["check_sources"] = tuple(r for r in map(_record, files) if r is not None)
    return out


def bind_check_path(cert: Certificate, specs: list[CheckSpec]) -> list[CheckSpec]:
    """The certified checks, ``python:`` ones importing from the certified ``check_path``."""
    if cert.check_path is None:
        return specs
    path = cert.check_path
    return [c.bound(path) if isinstance(c, PythonCheck) else c for c in specs]


def source_problems(cert: Certificate) -> list[str]:
    """Each recorded file now gone or changed, named, with the hint to pass ``--task``."""
    problems = []
    task = cert.task_file
    hint = f"pass --task {task.path if task is not None else 'TASK'} (or where the task is now)"
    if task is not None:
        problems += _compare(task, "the task file", hint)
    for source in cert.check_sources or ():
        problems += _compare(source, "the check module", hint)
    return problems


def _compare(recorded: RecordedFile, what: str, hint: str) -> list[str]:
    now = _record(Path(recorded.path))
    if now is None:
        return [f"{what} {recorded.path} is gone; {hint}"]
    if now.digest != recorded.digest:
        return [f"{what} {recorded.path} changed since certification; {hint}"]
    return []


def _record(path: Path) -> RecordedFile | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return RecordedFile(path=str(path.resolve()), digest=hashlib.sha256(data).hexdigest())
