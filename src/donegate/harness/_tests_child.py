"""The child side of a ``tests:`` check: run pytest or unittest, report each test's outcome.

`donegate.harness.testsuite` runs this file as ``python _tests_child.py FD`` in the workdir,
with the job (runner, arguments, nonce) on stdin. The runner is imported *before* the workdir
goes on ``sys.path`` (first, as ``python -m pytest`` or ``-m unittest`` put it), so a
``pytest.py`` or ``unittest.py`` the agent wrote cannot stand in for it. Each test's outcome is
collected from the runner's own reports (pytest's ``pytest_runtest_logreport``, a unittest
``TestResult``) and written, with the nonce and the runner's exit code, as one JSON object to
descriptor FD, made non-inheritable first: the tests' output and the programs they start
cannot write a report the harness would believe. Code the tests import runs in this process and
could still forge one (docs/certificates.md says so). Standard library and the runner only.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any


def main() -> None:
    """Read the job, run the runner, write the report to the result descriptor, exit."""
    channel = int(sys.argv[-1])
    os.set_inheritable(channel, False)
    job = json.loads(sys.stdin.buffer.read())
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    nonce = job.pop("nonce")
    outcomes: dict[str, str] = {}
    try:
        if job["runner"] == "pytest":
            code = _pytest(job["args"], outcomes)
        else:
            code = _unittest(job["args"], outcomes)
        report: dict[str, Any] = {"exit_code": code, "tests": outcomes}
    except BaseException as exc:  # the runner itself failed: a report saying so
        report = {"exit_code": None, "tests": outcomes, "error": repr(exc)[:500]}
    data = json.dumps({"nonce": nonce, **report}).encode()
    while data:
        data = data[os.write(channel, data) :]
    os.close(channel)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(0)


def _workdir_first() -> None:
    sys.path[0] = os.getcwd()  # where -m puts it (this file's folder is not on the path)


def _pytest(args: list[str], outcomes: dict[str, str]) -> int:
    import pytest

    class Collect:
        def pytest_runtest_logreport(self, report: Any) -> None:
            if report.when == "call" or report.outcome != "passed":
                previous = outcomes.get(report.nodeid)
                if previous in (None, "passed"):
                    outcomes[report.nodeid] = str(report.outcome)

    _workdir_first()
    sys.argv = ["pytest", *args]
    return int(pytest.main(args, plugins=[Collect()]))


def _unittest(args: list[str], outcomes: dict[str, str]) -> int:
    import unittest

    class Result(unittest.TextTestResult):
        def addSuccess(self, test: Any) -> None:
            super().addSuccess(test)
            outcomes.setdefault(test.id(), "passed")

        def addFailure(self, test: Any, err: Any) -> None:
            super().addFailure(test, err)
            outcomes[test.id()] = "failed"

        def addError(self, test: Any, err: Any) -> None:
            super().addError(test, err)
            outcomes[test.id()] = "failed"

        def addSkip(self, test: Any, reason: str) -> None:
            super().addSkip(test, reason)
            outcomes[test.id()] = "skipped"

        def addExpectedFailure(self, test: Any, err: Any) -> None:
            super().addExpectedFailure(test, err)
            outcomes[test.id()] = "skipped"

        def addUnexpectedSuccess(self, test: Any) -> None:
            super().addUnexpectedSuccess(test)
            outcomes[test.id()] = "failed"

    _workdir_first()
    runner = unittest.TextTestRunner(resultclass=Result)  # type: ignore[arg-type]
    program = unittest.main(
        module=None, argv=["python -m unittest", *args], testRunner=runner, exit=False
    )
    return 0 if program.result.wasSuccessful() and program.result.testsRun else 1


if __name__ == "__main__":
    main()
