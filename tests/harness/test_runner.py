"""`run_task`: seed 002's cases end to end, scripted worker and verifier, real tools and checks.

Each case asserts the model-call count and the continuation count.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from donegate.errors import EffectDivergence, UserError
from donegate.events import Event, Progress
from donegate.harness.checklist import Checklist
from donegate.harness.runner import TaskResult, arun_task, run_task
from donegate.harness.spec import TaskSpec
from donegate.harness.task_tools import build_tools
from donegate.messages import ToolCall, ToolResult
from donegate.run import run as plain_run
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script
from donegate.tools import MemoryLedger

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts" / "harness"
ENDPOINTS = ("users", "orders", "products", "carts", "payments", "invoices")


def player(name: str) -> ScriptedModel:
    return ScriptedModel(SCRIPTS / name)


def inline(turns: list[dict[str, Any]], *tools: str) -> ScriptedModel:
    stubs = {t: {"returns": "stub"} for t in tools}
    return ScriptedModel(parse_script({"prompt": "p", "tools": stubs, "turns": turns}, source="t"))


def task(**fields: Any) -> TaskSpec:
    return TaskSpec.model_validate({"id": "t", "prompt": "Do the task.", **fields})


def migration_task() -> TaskSpec:
    return task(
        id="migrate",
        checklist=[f"{e} endpoint" for e in ENDPOINTS],
        checks=[{"file_exists": f"api/{e}.py"} for e in ENDPOINTS],
        tools=["write_file", "update_checklist"],
    )


def nudges(result: TaskResult) -> list[str]:
    return [
        m.text for m in result.run.transcript if m.role == "user" and m.text.startswith("Not done")
    ]


# -- seed 002 ------------------------------------------------------------------------------


def test_a_migration_stopping_at_4_of_6_is_continued_to_6_of_6(tmp_path: Path) -> None:
    model = player("migration.yaml")
    result = run_task(migration_task(), model=model, workdir=tmp_path, completion_tool=None)
    assert result.status == "done"
    assert (result.model_calls, result.continuations) == (6, 1)
    assert sorted(p.stem for p in (tmp_path / "api").iterdir()) == sorted(ENDPOINTS)
    assert all(i.status == "done" for i in result.checklist)
    assert result.rounds[0].claim.startswith("Progress: 4 of 6 endpoints")
    assert nudges(result) == [
        "Not done yet: open checklist items: payments endpoint, invoices endpoint; failed "
        "checks: file_exists: api/payments.py (api/payments.py does not exist), file_exists: "
        "api/invoices.py (api/invoices.py does not exist). Continue, or state the blocker."
    ]
    assert result.certificate is not None and result.certificate.is_file()
    model.assert_exhausted()


def test_the_same_script_in_a_naive_loop_stops_at_4_of_6(tmp_path: Path) -> None:
    spec = migration_task()
    tools = build_tools(spec, tmp_path, Checklist(spec.checklist))
    result = plain_run(spec.prompt, model=player("migration.yaml"), tools=tools)
    assert result.complete and result.model_calls == 3
    assert len(list((tmp_path / "api").iterdir())) == 4


def failing_repo(root: Path) -> list[str]:
    (root / "calc.py").write_text("def double(x):\n    return x + x + 1\n")
    (root / "test_calc.py").write_text(
        "import unittest\nfrom calc import double\n\n"
        "class T(unittest.TestCase):\n    def test_double(self):\n"
        "        self.assertEqual(double(2), 4)\n"
    )
    return [sys.executable, "-m", "unittest", "-q"]


def test_a_tests_pass_claim_with_no_test_run_is_rejected_by_the_check(tmp_path: Path) -> None:
    command = failing_repo(tmp_path)
    spec = task(
        checks=[{"run": command, "name": "unit tests"}], tools=["write_file", "run_command"]
    )
    model = inline(
        [
            {"text": "I fixed it. All tests pass."},
            {"tool_call": "write_file",
             "args": {"path": "calc.py", "content": "def double(x):\n    return 2 * x\n"}},
            {"tool_call": "run_command", "args": {"command": shlex.join(command)}},
            {"text": "Fixed double(); the test run passes."},
        ],
        "write_file", "run_command",
    )  # fmt: skip
    result = run_task(spec, model=model, workdir=tmp_path, completion_tool=None)
    assert result.status == "done"
    assert (result.model_calls, result.continuations) == (4, 1)
    first = result.rounds[0]
    assert first.claim == "I fixed it. All tests pass."
    assert [c.exit_code for c in first.checks] == [1]
    [nudge] = nudges(result)
    assert nudge.startswith("Not done yet: failed checks: unit tests (exit code 1")
    assert [r.tool for r in result.evidence] == ["write_file", "run_command"]
    assert result.evidence[1].output.startswith("exit code 0")
    assert [c.passed for c in result.checks] == [True]


def test_a_stuck_task_escalates_after_exactly_3_continuations(tmp_path: Path) -> None:
    spec = task(
        id="stuck",
        checklist=["write the report"],
        checks=[{"file_contains": {"path": "report.txt", "text": "READY"}, "name": "ready"}],
        tools=["write_file", "update_checklist"],
        completion_condition="report.txt says READY",
    )
    model = player("stuck.yaml")
    result = run_task(spec, model=model, workdir=tmp_path, completion_tool=None)
    assert result.status == "escalated"
    assert (result.model_calls, result.continuations) == (5, 3)
    assert [r.verdict.action for r in result.rounds] == ["continue"] * 3 + ["stop"]
    assert len(nudges(result)) == 3
    assert result.certificate is None
    assert result.reason.startswith("not done after 3 continuation(s): ")
    report = result.escalation
    assert report is not None
    assert report.left.open_items[0].item == "write the report"
    assert [c.name for c in report.left.failed_checks] == ["ready"]
    assert [r.verdict for r in report.why_stuck] == ["continue"] * 3 + ["stop"]
    assert [a.tool for a in report.attempted] == ["write_file"]
    assert len(report.state.transcript) == len(result.run.transcript) == 11
    assert report.as_data()["state"]["checklist"] == [
        {"item": "write the report", "status": "open", "note": "", "since_step": 5,
         "updated_step": None, "added_by_model": False}
    ]  # fmt: skip
    assert report.files is not None
    saved = json.loads(Path(report.files.json_path).read_text())
    assert saved["reason"] == result.reason and "files" not in saved
    markdown = Path(report.files.markdown).read_text()
    assert markdown.startswith("# Escalated: stuck")
    assert "- [ ] write the report: open" in markdown
    assert "check failed: `ready`" in markdown
    assert (tmp_path / "report.txt").read_text() == "PENDING\n"  # state left as it was
    model.assert_exhausted()


def test_an_early_completion_tool_call_is_rejected(tmp_path: Path) -> None:
    spec = task(checks=[{"file_contains": {"path": "hello.txt", "text": "hello"}}],
                tools=["write_file"])  # fmt: skip
    model = player("early_completion.yaml")
    result = run_task(spec, model=model, workdir=tmp_path)
    assert result.status == "done"
    assert (result.model_calls, result.continuations) == (3, 1)
    assert [r.via for r in result.rounds] == ["completion_tool", "completion_tool"]
    [nudge] = nudges(result)
    assert nudge.startswith("Not done yet: the completion call was not accepted; failed checks")
    assert result.run.output == {"summary": "hello.txt written, for real this time"}
    assert [t.name for t in model.requests[0].tools] == ["write_file", "task_complete"]
    model.assert_exhausted()


def test_a_checklist_ticked_without_evidence_is_caught_by_the_verifier(tmp_path: Path) -> None:
    spec = task(
        checklist=["write VERSION", "run the tests"],
        completion_condition="VERSION exists and a test run passed",
        checks=[{"file_exists": "VERSION"}],
        tools=["write_file", "run_command", "update_checklist"],
    )
    worker, judge = player("unticked_evidence.yaml"), player("verifier_verdicts.yaml")
    result = run_task(spec, model=worker, verifier_model=judge, workdir=tmp_path,
                      completion_tool=None)  # fmt: skip
    assert result.status == "done"
    assert (result.model_calls, result.continuations, result.verifier_calls) == (6, 1, 2)
    first, second = (r.messages[-1].text for r in judge.requests)
    flagged = "## Checklist items ticked without supporting evidence\n- run the tests: "
    assert flagged in first and "- write VERSION" not in first.split(flagged)[1]
    assert "ticked without supporting evidence" not in second
    assert "run_command" in second and "1 test passed" in second
    assert result.rounds[0].flagged[0][0] == "run the tests"
    [nudge] = nudges(result)
    assert nudge == (
        "Not done yet: verifier: no test run is recorded; 'run the tests' was ticked without "
        "one. Continue, or state the blocker."
    )
    worker.assert_exhausted()
    judge.assert_exhausted()


# -- loop failures, keys, progress ---------------------------------------------------------


@pytest.mark.parametrize(
    ("turns", "calls", "reason"),
    [
        ([{"text": "cut", "ending": "truncated"}] * 2, 2, "truncated: "),
        ([{"refusal": "I can't help with that."}], 1, "refused: the model refused"),
        ([{"http_error": 400, "message": "invalid request"}], 1, "provider_error: "),
        ([{"text": "   "}], 1, "empty: "),
    ],
)
def test_loop_failures_end_the_task_failed_with_their_reason(
    tmp_path: Path, turns: list[dict[str, Any]], calls: int, reason: str
) -> None:
    result = run_task(task(checks=[{"file_exists": "x"}]), model=inline(turns),
                      workdir=tmp_path)  # fmt: skip
    assert result.status == "failed"
    assert result.reason.startswith(reason)
    assert (result.model_calls, result.continuations) == (calls, 0)
    assert result.certificate is None
    # docs/tasks.md: a failed run writes its report where an escalated one goes
    assert result.escalation is not None and result.escalation.reason == result.reason
    assert result.escalation.files is not None
    assert Path(result.escalation.files.markdown).parent.name == "escalations"
    assert result.summary()["reason"] == result.reason


def test_the_step_limit_fails_the_task(tmp_path: Path) -> None:
    turn = {"tool_call": "list_dir", "args": {}}
    spec = task(max_steps=2, tools=["list_dir"], closure="model")
    result = run_task(spec, model=inline([turn] * 2, "list_dir"), workdir=tmp_path)
    assert result.status == "failed" and result.reason.startswith("max_steps: ")
    assert result.model_calls == 2


def test_side_effecting_calls_carry_task_step_call_keys(tmp_path: Path) -> None:
    result = run_task(migration_task(), model=player("migration.yaml"), workdir=tmp_path,
                      completion_tool=None)  # fmt: skip
    keys = [(r.tool, r.idempotency_key) for r in result.evidence]
    assert keys[:4] == [("write_file", f"migrate:1:{i}") for i in range(4)]
    assert keys[4] == ("update_checklist", None)
    assert ("write_file", "migrate:4:1") in keys


def test_a_recorded_key_is_answered_from_the_ledger_not_run_again(tmp_path: Path) -> None:
    ledger = MemoryLedger()
    ledger.record("t:1:0", ToolResult(call_id="old", name="write_file", content="wrote earlier"))
    model = inline(
        [{"tool_call": "write_file", "args": {"path": "a.txt", "content": "x"}}, {"text": "ok"}],
        "write_file",
    )
    result = run_task(task(tools=["write_file"], closure="model"), model=model, workdir=tmp_path,
                      ledger=ledger, completion_tool=None)  # fmt: skip
    assert result.status == "done"
    assert not (tmp_path / "a.txt").exists()
    [record] = result.evidence
    assert (record.executed, record.output, record.idempotency_key) == (
        False, "wrote earlier", "t:1:0"
    )  # fmt: skip


@pytest.mark.parametrize("recorded", [True, False])
def test_a_key_held_by_another_call_raises_instead_of_answering_or_running(
    tmp_path: Path, recorded: bool
) -> None:
    ledger = MemoryLedger()
    held = ToolCall.from_args(
        id="c0", name="write_file", arguments={"path": "a.txt", "content": "x"}
    )
    ledger.begin("t:1:0", held)
    if recorded:
        ledger.record("t:1:0", ToolResult(call_id="c0", name="write_file", content="wrote a.txt"))
    model = inline(
        [{"tool_call": "write_file", "args": {"path": "b.txt", "content": "x"}}, {"text": "ok"}],
        "write_file",
    )
    with pytest.raises(EffectDivergence, match="t:1:0: the ledger holds write_file"):
        run_task(task(tools=["write_file"], closure="model"), model=model, workdir=tmp_path,
                 ledger=ledger, completion_tool=None)  # fmt: skip
    assert not (tmp_path / "b.txt").exists()
    assert ledger.begun["t:1:0"] == held


def test_progress_in_thinking_becomes_events_never_the_claim(tmp_path: Path) -> None:
    seen: list[Event] = []

    def sink(event: Event) -> None:
        seen.append(event)

    result = run_task(migration_task(), model=player("migration.yaml"), workdir=tmp_path,
                      events=sink, completion_tool=None)  # fmt: skip
    progress = [e for e in seen if isinstance(e, Progress)]
    assert [(e.step, e.text) for e in progress] == [(3, "Migrated 4 of 6 endpoints so far.")]
    assert "Migrated 4 of 6" not in result.rounds[0].claim


def test_arun_task_takes_the_same_decisions(tmp_path: Path) -> None:
    result = asyncio.run(arun_task(migration_task(), model=player("migration.yaml"),
                                   workdir=tmp_path, completion_tool=None))  # fmt: skip
    assert result.status == "done"
    assert (result.model_calls, result.continuations) == (6, 1)


def test_user_tools_are_imported_by_path_with_their_side_effect_flag(tmp_path: Path) -> None:
    (tmp_path / "deploytools.py").write_text(
        "def deploy(target: str, idempotency_key: str | None = None) -> str:\n"
        "    return f'deployed {target} under {idempotency_key}'\n"
    )
    spec = task(tools=[{"import": "deploytools:deploy", "side_effect": True}], closure="model")
    model = inline([{"tool_call": "deploy", "args": {"target": "prod"}}, {"text": "deployed"}],
                   "deploy")  # fmt: skip
    result = run_task(spec, model=model, workdir=tmp_path, completion_tool=None)
    assert result.evidence[0].output == "deployed prod under t:1:0"


def test_setup_problems_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no model"):
        run_task(task(closure="model"), workdir=tmp_path)
    with pytest.raises(UserError, match="load script models"):
        run_task(task(closure="model"), model="script:x.yaml", workdir=tmp_path)
    with pytest.raises(UserError, match="no update_checklist tool"):
        run_task(
            task(checklist=["a"], tools=["read_file"], closure="model"), model=ScriptedModel([]),
            workdir=tmp_path,
        )  # fmt: skip
    with pytest.raises(UserError, match="no module named"):
        run_task(task(tools=[{"import": "nosuchmod:f", "side_effect": False}], closure="model"),
                 model=ScriptedModel([]), workdir=tmp_path)  # fmt: skip


def test_an_unknown_option_is_the_type_error_a_keyword_would_be(tmp_path: Path) -> None:
    with pytest.raises(
        TypeError, match=r"^run_task\(\) got an unexpected keyword argument 'work_dir'"
    ):
        run_task(task(closure="model"), model=ScriptedModel([]), work_dir=tmp_path)  # type: ignore[call-arg]
    with pytest.raises(
        TypeError, match=r"^arun_task\(\) got an unexpected keyword argument 'modle'"
    ):
        asyncio.run(arun_task(task(closure="model"), modle=ScriptedModel([])))  # type: ignore[call-arg]
