"""The child side of a ``python:`` check: import ``module:function``, call it, report.

`donegate.harness.checks` runs this file as ``python -I _check_child.py FD``: isolated mode, so
neither the current directory (the workdir), nor this file's folder, nor ``PYTHONPATH`` is on
``sys.path``; the folders to import from arrive on stdin with the target, the workdir and a
nonce. They go after the standard library and the installed packages, so a file added beside
the check module (``subprocess.py``, ``yaml.py``) cannot replace a module the check imports;
a check module that is itself hidden by an installed one is reported, not run. The outcome goes
back as one JSON object carrying the nonce on descriptor FD, which is
made non-inheritable first: the check's own output, and anything the check starts, cannot
write a result the harness would believe. Standard library only: importing donegate here would
put the harness's imports in the check's process and slow every check down.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import json
import os
import sys
from pathlib import Path
from typing import Any

_DETAIL_LIMIT = 2000  # the harness keeps one line of it anyway


def main() -> None:
    """Read the job from stdin, run it, write the outcome to the result descriptor, exit."""
    channel = int(sys.argv[-1])
    os.set_inheritable(channel, False)
    job = json.loads(sys.stdin.buffer.read())
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # the check reads nothing the harness wrote
    os.close(null)
    nonce = job.pop("nonce")
    folders = [p for p in job["path"] if p not in sys.path]
    sys.path.extend(folders)
    sys.argv = [job["target"]]
    outcome = _call(job["target"], Path(job["workdir"]), folders)
    data = json.dumps({"nonce": nonce, **outcome}).encode()
    while data:
        data = data[os.write(channel, data) :]
    os.close(channel)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # the check closed it
            stream.flush()
    os._exit(0)  # threads the check left behind do not hold the harness


def _call(target: str, workdir: Path, folders: list[str]) -> dict[str, Any]:
    module_name, _, attr = target.partition(":")
    top = module_name.partition(".")[0]
    local = importlib.machinery.PathFinder.find_spec(top, folders) if folders else None
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == module_name or module_name.startswith(f"{exc.name}.")):
            return {"status": "no_module", "name": exc.name}
        return _done(False, f"import failed: {exc}")
    except BaseException as exc:  # a broken module is a failing check, not a crash
        return _done(False, f"import failed: {exc!r}")
    imported = sys.modules[top].__spec__
    if local is not None and imported is not None and imported.origin != local.origin:
        return {"status": "hidden", "by": str(imported.origin), "name": top}
    function = getattr(module, attr, None)
    if not callable(function):
        return {"status": "no_function"}
    try:
        result = function(workdir)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included
        return _done(False, f"raised {exc!r}")
    if isinstance(result, bool):
        return _done(result, f"returned {result}")
    if (
        isinstance(result, tuple)
        and len(result) == 2
        and isinstance(result[0], bool)
        and isinstance(result[1], str)
    ):
        return _done(result[0], result[1] or str(result[0]))
    return _done(False, f"returned {result!r}; expected a bool or (bool, str)")


def _done(passed: bool, detail: str) -> dict[str, Any]:
    return {"status": "done", "passed": passed, "detail": detail[:_DETAIL_LIMIT]}


if __name__ == "__main__":
    main()
