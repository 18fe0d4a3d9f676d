"""Task budgets (issue 31): scripted usage drives when a task's next model call may not be made.

Each test runs `run_task` with a scripted worker (and verifier) whose turns report `usage:`, and
asserts what the budget let through: the calls made, the spend by model and role, the reason.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from donegate.errors import TaskSpecError, UserError
from donegate.harness.runner import TaskResult, run_task
from donegate.harness.spec import TaskSpec, load_task
from donegate.messages import Message, Usage
from donegate.models.base import ModelSettings
from donegate.models.infer import infer_model
from donegate.spend import Budget, PriceBook
from donegate.testing.player import ScriptedModel, sdk_client
from donegate.testing.script import parse_script

SONNET = "anthropic:claude-sonnet-4-5"


def scripted(turns: list[dict[str, Any]], *, name: str = "script") -> ScriptedModel:
    return ScriptedModel(parse_script({"prompt": "p", "turns": turns}, source="t"), name=name)


def progress(n: int, usage: dict[str, int]) -> list[dict[str, Any]]:
    """`n` text-only turns claiming progress: each is a claim the failing check sends back."""
    return [{"text": f"Progress {i}: working on it.", "usage": usage} for i in range(n)]


def task(**fields: Any) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "id": "spend",
            "prompt": "Write done.txt.",
            "checks": [{"file_exists": "done.txt"}],
            "max_continuations": 20,
            "tools": ["write_file"],
            **fields,
        }
    )


def needed(result: TaskResult) -> int:
    """The input estimate the refusal named (``needs ~N input tokens``)."""
    found = re.search(r"needs ~(\d+) input tokens", result.reason)
    assert found is not None, result.reason
    return int(found.group(1))


def test_a_task_escalates_exactly_when_the_next_call_would_pass_its_token_budget(
    tmp_path: Path,
) -> None:
    usage = {"input_tokens": 100, "output_tokens": 50}
    model = scripted(progress(10, usage))
    result = run_task(
        task(budget={"tokens": 600}), model=model, workdir=tmp_path, completion_tool=None,
        output_dir=tmp_path / "out",
    )  # fmt: skip
    assert result.status == "escalated"
    assert result.reason.startswith("budget exhausted")
    assert result.run.status.value == "budget_exceeded"
    calls = result.model_calls
    assert model.calls == calls == result.spend.calls
    assert result.spend.tokens == 150 * calls
    assert 600 - 150 * calls < needed(result) + 1  # the next call could not fit...
    # ...and one token more budget is exactly what lets it be made
    again = scripted(progress(10, usage))
    more = run_task(
        task(budget={"tokens": 150 * calls + needed(result) + 1}), model=again,
        workdir=tmp_path, completion_tool=None, output_dir=tmp_path / "out",
    )  # fmt: skip
    assert more.model_calls == calls + 1
    assert more.reason.startswith("budget exhausted")
    # the report shows the spend by model and role
    report = result.escalation
    assert report is not None and report.spend is not None
    assert report.spend["lines"] == [
        {"model": "script", "role": "agent", "calls": calls, "input_tokens": 100 * calls,
         "output_tokens": 50 * calls, "cache_read_tokens": 0, "cache_write_tokens": 0,
         "usd": None},
    ]  # fmt: skip
    assert report.files is not None
    assert "## Spend" in Path(report.files.markdown).read_text(encoding="utf-8")
    assert result.summary()["spend"]["tokens"] == 150 * calls


def test_a_usd_budget_at_a_known_models_price(tmp_path: Path) -> None:
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    usage = {"input_tokens": 1000, "output_tokens": 100}
    one = float(
        calc_price(
            PriceUsage(input_tokens=1000, output_tokens=100),
            model_ref="claude-sonnet-4-5",
            provider_id="anthropic",
        ).total_price
    )
    model = scripted(progress(10, usage), name=SONNET)
    budget = 2.5 * one  # two calls fit; a third's input alone would pass the rest
    result = run_task(
        task(budget={"usd": budget}), model=model, workdir=tmp_path, completion_tool=None,
        output_dir=tmp_path / "out",
    )  # fmt: skip
    assert (result.status, result.model_calls, model.calls) == ("escalated", 2, 2)
    assert result.reason.startswith("budget exhausted")
    assert result.spend.usd == pytest.approx(2 * one)
    (line,) = result.spend.lines
    assert (line.model, line.role, line.calls) == (SONNET, "agent", 2)


def test_cache_tokens_are_priced_as_the_provider_prices_them() -> None:
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    usage = Usage(input_tokens=10_000, cache_read_tokens=6000, cache_write_tokens=3000,
                  output_tokens=200)  # fmt: skip
    want = calc_price(
        PriceUsage(input_tokens=10_000, cache_read_tokens=6000, cache_write_tokens=3000,
                   output_tokens=200),
        model_ref="claude-sonnet-4-5", provider_id="anthropic",
    ).total_price  # fmt: skip
    plain = PriceBook().cost(SONNET, Usage(input_tokens=10_000, output_tokens=200))
    assert PriceBook().cost(SONNET, usage) == pytest.approx(float(want))
    assert plain is not None and plain != pytest.approx(float(want))


def test_a_tasks_prices_override_the_database(tmp_path: Path) -> None:
    model = scripted(progress(10, {"input_tokens": 1_000_000, "output_tokens": 0}),
                     name="acme:house-model")  # fmt: skip
    spec = task(budget={"usd": 2.5}, prices={"acme:house-model": {"input": 1.0, "output": 2.0}})
    result = run_task(spec, model=model, workdir=tmp_path, completion_tool=None,
                      output_dir=tmp_path / "out")  # fmt: skip
    assert result.model_calls == 2
    assert result.spend.usd == pytest.approx(2.0)


def test_the_verifiers_calls_count(tmp_path: Path) -> None:
    (tmp_path / "done.txt").write_text("x")  # the checks pass: the verifier is asked
    worker = scripted(
        [
            {"tool_call": "task_complete", "args": {"summary": "done"},
             "usage": {"input_tokens": 100, "output_tokens": 10}},
            {"tool_call": "task_complete", "args": {"summary": "done, really"},
             "usage": {"input_tokens": 100, "output_tokens": 10}},
        ]
    )  # fmt: skip
    verdict = {"complete": False, "reason": "no evidence"}
    verifier = scripted(
        [{"tool_call": "report_verdict", "args": verdict,
          "usage": {"input_tokens": 1000, "output_tokens": 10}}] * 2,
        name="script-verifier",
    )  # fmt: skip
    spec = task(budget={"tokens": 1100}, verifier="script:v.yaml")
    result = run_task(spec, model=worker, verifier_model=verifier, workdir=tmp_path,
                      output_dir=tmp_path / "out")  # fmt: skip
    assert result.status == "escalated" and result.reason.startswith("budget exhausted")
    assert (worker.calls, verifier.calls) == (1, 1)  # without the verifier's 1010 it went on
    roles = {(line.role, line.model): line.calls for line in result.spend.lines}
    assert roles == {("agent", "script"): 1, ("verifier", "script-verifier"): 1}
    assert result.spend.tokens == 110 + 1010


def test_max_tokens_is_clipped_in_the_request_the_adapter_sent(tmp_path: Path) -> None:
    usage = {"input_tokens": 300, "output_tokens": 200}
    player = scripted(progress(3, usage))
    model = infer_model(sdk_client("anthropic-messages", player), model_name="claude-sonnet-4-5")
    result = run_task(
        task(budget={"tokens": 1500}), model=model, workdir=tmp_path, completion_tool=None,
        output_dir=tmp_path / "out",
    )  # fmt: skip
    sent = [body["max_tokens"] for body in player.bodies]
    assert len(sent) == result.model_calls >= 2
    assert sent[0] < 1500  # clipped from the adapter's default of 4096
    assert sent[1] < 1500 - 500  # what is left after the first call's 500 tokens
    unlimited = scripted(progress(1, usage))
    plain = infer_model(sdk_client("anthropic-messages", unlimited), model_name="claude-sonnet-4-5")
    run_task(task(max_continuations=0), model=plain, workdir=tmp_path, completion_tool=None,
             output_dir=tmp_path / "out")  # fmt: skip
    assert unlimited.bodies[0]["max_tokens"] == 4096


def test_an_unknown_model_with_a_usd_budget_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(
        "id: t\nprompt: p\nclosure: model\nmodel: openai:no-such-model-xyz\nbudget: {usd: 1}\n"
    )
    with pytest.raises(TaskSpecError) as caught:
        load_task(path)
    assert "no price is known for model 'openai:no-such-model-xyz'" in str(caught.value)
    assert "\n" not in str(caught.value)
    # a model given at run time is refused before its first call
    model = scripted(progress(1, {"input_tokens": 1}), name="openai:no-such-model-xyz")
    with pytest.raises(UserError, match="no price is known"):
        run_task(task(budget={"usd": 1}), model=model, workdir=tmp_path,
                 output_dir=tmp_path / "out")  # fmt: skip
    assert model.calls == 0


@pytest.mark.parametrize(
    ("budget", "problem"),
    [
        ({}, "a budget needs `tokens`, `usd` or both"),
        ({"tokens": 0}, "greater than or equal to 1"),
        ({"usd": -1}, "greater than 0"),
        ({"dollars": 1}, "extra inputs are not permitted"),
    ],
)
def test_a_bad_budget_is_one_line(budget: dict[str, Any], problem: str) -> None:
    from donegate.harness.spec import validate_task

    with pytest.raises(TaskSpecError) as caught:
        validate_task({"id": "t", "prompt": "p", "closure": "model", "budget": budget})
    assert problem in str(caught.value) and "\n" not in str(caught.value)


def test_the_estimate_errs_high_and_counts_what_was_added() -> None:
    budget = Budget(tokens=10_000)
    meter = budget.meter("agent")
    first = [Message.user("x" * 300)]
    admitted = meter.admit("m", first, (), ModelSettings(max_tokens=100_000))
    assert isinstance(admitted, ModelSettings) and admitted.max_tokens is not None
    assert 10_000 - admitted.max_tokens >= 100  # 300 characters: at least 100 tokens
    meter.charge("m", Usage(input_tokens=80, output_tokens=20), len(first))
    grown = [*first, Message.user("y" * 30)]
    clipped = meter.admit("m", grown, (), ModelSettings(max_tokens=100_000))
    assert isinstance(clipped, ModelSettings) and clipped.max_tokens is not None
    # the last reported input (80), its answer (20), the added message (30 chars: 10 and more)
    assert 10_000 - 100 - clipped.max_tokens >= 80 + 20 + 10
    assert meter.admit("m", grown, (), ModelSettings(max_tokens=10)) == ModelSettings(
        max_tokens=10
    )  # a limit below what is left is kept
