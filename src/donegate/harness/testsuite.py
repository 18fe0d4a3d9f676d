"""The ``tests:`` check: a test run judged by the runner's own report, not its exit code.

``run: pytest -q`` passes on exit code 0, and code under test that calls ``os._exit(0)`` while
pytest collects, or a runner shadowed in the workdir, exits 0 with no test run. A ``tests:``
check runs pytest or unittest through `_tests_child` (the real runner, imported before the
workdir is on the path), which reports every test's outcome on a private descriptor with a
nonce. The check passes only when that report came back, the runner succeeded, at least
``expect.passed_at_least`` tests passed and every id in ``expect.ids`` passed; otherwise its
one-line detail says which (``exit code 0 and no report from the runner``,
``tests/test_calc.py::test_double did not run``, ``2 passed, expected at least 3``).

Ids are the runner's own: pytest node ids (``tests/test_calc.py::test_double``), unittest
test ids (``test_calc.CalcTest.test_double``).
"""

from __future__ import annotations

import hmac
import json
import secrets
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from donegate.harness import _process
from donegate.harness.spec_checks import TestsCheck

if TYPE_CHECKING:
    from donegate.harness.room import Stage

__all__ = ["run_tests", "verdict"]

_CHILD = Path(__file__).with_name("_tests_child.py")


def run_tests(spec: TestsCheck, stage: Stage, timeout: float) -> dict[str, Any]:
    """Run the check's tests over the claim's room (`stage`, in its sandbox); the
    `CheckResult` fields (``output`` included)."""
    args = spec.tests
    command = shlex.join(["python", "-m", args.runner, *args.args])
    nonce = secrets.token_hex(16)
    job = {"nonce": nonce, "runner": args.runner, "args": list(args.args)}
    try:
        done = _process.run(
            stage.argv(
                [sys.executable, str(_CHILD)], network=spec.network, readable=[str(_CHILD.parent)]
            ),
            cwd=stage.room,
            env=stage.env(),
            timeout=timeout,
            stdin=json.dumps(job).encode(),
            result_pipe=True,
        )
    except OSError as exc:
        detail = f"cannot start the interpreter {sys.executable!r}: {exc.strerror or exc}"
        return {"passed": False, "detail": detail, "command": command}
    output = done.output
    text = output.head.decode("utf-8", errors="replace") if output.complete else ""
    if not output.complete:
        text = output.tail.decode("utf-8", errors="replace")
    fields: dict[str, Any] = {"command": command, "output": text, "output_digest": output.digest}
    if done.timed_out:
        return {"passed": False, "detail": f"timed out after {timeout:g}s", **fields}
    report = _report(done.result, nonce)
    passed, detail = verdict(spec, report, done.returncode)
    code = report.get("exit_code") if report is not None else done.returncode
    return {"passed": passed, "detail": detail, "exit_code": code, **fields}


def _report(raw: bytes, nonce: str) -> dict[str, Any] | None:
    """The child's report; None when there is none or it lacks the nonce (fail closed)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or not hmac.compare_digest(str(data.get("nonce")), nonce):
        return None
    tests = data.get("tests")
    if not isinstance(tests, dict) or not all(isinstance(v, str) for v in tests.values()):
        return None
    return data


def verdict(
    spec: TestsCheck, report: dict[str, Any] | None, returncode: int | None
) -> tuple[bool, str]:
    """Whether the runner's `report` meets the check's expectations, and the one line why."""
    if report is None:
        return False, f"exit code {returncode} and no report from the runner"
    if "error" in report:
        return False, f"the runner failed: {report['error']}"
    tests: dict[str, str] = report["tests"]
    passed = sorted(t for t, outcome in tests.items() if outcome == "passed")
    failed = sorted(t for t, outcome in tests.items() if outcome == "failed")
    expect = spec.tests.expect
    for wanted in expect.ids:
        outcome = tests.get(wanted)
        if outcome != "passed":
            return False, f"{wanted} {'did not run' if outcome is None else outcome}"
    if failed:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        return False, f"{failed[0]} failed{more}"
    if report.get("exit_code") != 0:
        return False, f"the runner exited with code {report.get('exit_code')}"
    if len(passed) < expect.passed_at_least:
        return False, f"{len(passed)} passed, expected at least {expect.passed_at_least}"
    return True, f"{len(passed)} passed (at least {expect.passed_at_least} expected)"
