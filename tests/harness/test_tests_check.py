"""The ``tests:`` check reads the runner's own report: an exit 0 is not enough (issue 23, item 5).

Code under test that leaves the process while pytest collects, or a runner shadowed in the
workdir, makes ``run: python -m pytest`` pass with no test run; the ``tests:`` kind fails it,
and says which: no report, a missing id, too few passed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tests.harness.test_attack_proof import BUGGY, FIXED, agent, claims, repo, write

from donegate.harness.checks import run_check
from donegate.harness.runner import run_task
from donegate.harness.spec import TaskSpec, TaskSpecError, TestsCheck, validate_task
from donegate.records.check import CheckResult

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths"),
    pytest.mark.usefixtures("plain_check_pytest"),
]

UNIT = (
    "import unittest\n\nfrom calc import double\n\n\nclass CalcTest(unittest.TestCase):\n"
    "    def test_double(self):\n        self.assertEqual(double(2), 4)\n\n"
    "    def test_zero(self):\n        self.assertEqual(double(0), 0)\n"
)


def check(data: dict[str, Any]) -> TestsCheck:
    spec = TaskSpec.model_validate({"id": "t", "prompt": "p", "checks": [{"tests": data}]})
    [one] = spec.checks
    assert isinstance(one, TestsCheck)
    return one


def run(root: Path, data: dict[str, Any]) -> CheckResult:
    return run_check(check(data), workdir=root, timeout=60)


PYTEST_ID = "tests/test_calc.py::test_double"


def test_pytest_passes_with_every_expected_id(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "calc.py").write_text(FIXED)
    result = run(root, {"runner": "pytest", "args": ["-q", "-p", "no:cacheprovider"],
                        "expect": {"passed_at_least": 2, "ids": [PYTEST_ID]}})  # fmt: skip
    assert (result.passed, result.detail) == (True, "2 passed (at least 2 expected)")
    assert result.name == "tests: pytest -q -p no:cacheprovider"
    assert result.exit_code == 0


def test_a_failing_test_fails_naming_it(tmp_path: Path) -> None:
    root = repo(tmp_path)
    result = run(root, {"runner": "pytest", "args": ["-q", "-p", "no:cacheprovider"]})
    assert (result.passed, result.detail) == (False, f"{PYTEST_ID} failed")


def test_an_exit_at_import_leaves_no_report_and_fails(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "calc.py").write_text("import os\n\nos._exit(0)\n" + BUGGY)
    data = {"runner": "pytest", "args": ["-q", "-p", "no:cacheprovider"]}
    result = run(root, data)
    assert (result.passed, result.detail) == (False, "exit code 0 and no report from the runner")
    # the same run as a run: check: exit 0, a pass
    plain = run_check(
        TaskSpec.model_validate(
            {"id": "t", "prompt": "p",
             "checks": [{"run": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]}]}
        ).checks[0],
        workdir=root,
    )  # fmt: skip
    assert plain.passed


def test_a_deselected_test_is_a_missing_id(tmp_path: Path) -> None:
    root = repo(tmp_path)
    data = {"runner": "pytest", "args": ["-q", "-p", "no:cacheprovider", "-k", "not double"],
            "expect": {"ids": [PYTEST_ID]}}  # fmt: skip
    result = run(root, data)
    assert (result.passed, result.detail) == (False, f"{PYTEST_ID} did not run")


def test_too_few_passed_fails(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "calc.py").write_text(FIXED)
    result = run(root, {"runner": "pytest", "args": ["-q", "-p", "no:cacheprovider"],
                        "expect": {"passed_at_least": 5}})  # fmt: skip
    assert (result.passed, result.detail) == (False, "2 passed, expected at least 5")


def test_a_shadowed_runner_is_not_the_runner(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "pytest.py").write_text("print('2 passed')\n")
    result = run(root, {"runner": "pytest", "args": ["-q", "-p", "no:cacheprovider"]})
    assert (result.passed, result.detail) == (False, f"{PYTEST_ID} failed")


def test_unittest_reports_by_test_id(tmp_path: Path) -> None:
    root = tmp_path
    (root / "calc.py").write_text(FIXED)
    (root / "test_calc.py").write_text(UNIT)
    (root / "unittest.py").write_text("print('OK')\n")  # not the runner the check runs
    data = {"runner": "unittest", "args": ["test_calc"],
            "expect": {"ids": ["test_calc.CalcTest.test_double"],
                       "passed_at_least": 2}}  # fmt: skip
    assert run(root, data).detail == "2 passed (at least 2 expected)"
    (root / "calc.py").write_text(BUGGY)
    result = run(root, data)
    assert (result.passed, result.detail) == (False, "test_calc.CalcTest.test_double failed")


def test_unittest_patched_from_inside_is_still_judged_by_ids(tmp_path: Path) -> None:
    root = tmp_path
    (root / "calc.py").write_text(
        "import os\n\nos._exit(0)\n"  # at import: the run ends before any report
    )
    (root / "test_calc.py").write_text(UNIT)
    data = {"runner": "unittest", "args": ["test_calc"]}
    result = run(root, data)
    assert (result.passed, result.detail) == (False, "exit code 0 and no report from the runner")


@pytest.mark.parametrize(
    ("tests", "message"),
    [
        ({"runner": "nose"}, "tests.runner"),
        ({"runner": "pytest", "expect": {"passed_at_least": -1}}, "passed_at_least"),
        ({"runner": "pytest", "expect": {"ids": [""]}}, "ids"),
        ({"runner": "pytest", "extra": 1}, "extra"),
    ],
)
def test_a_bad_tests_check_is_refused_naming_the_field(tests: dict[str, Any], message: str) -> None:
    with pytest.raises(TaskSpecError, match=message):
        validate_task({"id": "t", "prompt": "p", "checks": [{"tests": tests}]})


def test_under_run_a_forged_exit_does_not_finish_done(tmp_path: Path) -> None:
    root = repo(tmp_path)
    spec = TaskSpec.model_validate(
        {"id": "calc", "prompt": "Fix double().", "tools": ["write_file", "run_command"],
         "max_continuations": 1, "protect": ["tests/**"],
         "checks": [{"tests": {"runner": "pytest", "args": ["-q", "-p", "no:cacheprovider"],
                               "expect": {"ids": [PYTEST_ID]}}}]}
    )  # fmt: skip
    model = agent(write("calc.py", "import os\n\nos._exit(0)\n"), *claims(2))
    result = run_task(spec, model=model, workdir=root, completion_tool=None)
    assert result.status == "escalated"
    [tests] = [c for c in result.rounds[0].checks if c.kind == "tests"]
    assert tests.detail == "exit code 0 and no report from the runner"
