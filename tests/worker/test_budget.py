"""A task's budget under the worker: resumes count a journaled turn once, requeues carry the spend
and may grant more (`escalations resolve --requeue --budget-extra`)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from donegate.cli import main
from donegate.messages import Turn, Usage
from donegate.models.base import Model
from donegate.store.sql import SqlStore
from donegate.worker import ModelResolver, Worker, submit
from tests.review.helpers import reviewer_file
from tests.worker.helpers import Killed, StepModel, task, text_turn, tool_turn

USAGE = Usage(input_tokens=1000, output_tokens=10)


def costing(turn: Turn) -> Turn:
    """`turn` reporting 1010 tokens."""
    return replace(turn, usage=USAGE)


def donegate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out + out.err


def fixed(model: Model) -> ModelResolver:
    return lambda name, what: model


def test_a_resume_after_a_kill_counts_each_journaled_turn_once(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent, budget={"tokens": 10_000}), store)
    first = StepModel(
        [
            costing(tool_turn("send", {"to": "ann"}, "c1")),
            costing(tool_turn("send", {"to": "cy"}, "c2")),
            Killed(),  # SIGKILL in process: nothing is given back or recorded
        ]
    )
    with pytest.raises(Killed):
        Worker(store, lease_s=0.1, model_resolver=fixed(first.model)).run_one()
    time.sleep(0.15)
    resumed = StepModel([costing(text_turn("Sent both."))], first=3)
    outcome = Worker(store, model_resolver=fixed(resumed.model)).run_one()
    assert outcome is not None and outcome.status == "done", outcome
    assert (outcome.model_calls, outcome.replayed_calls) == (3, 2)
    record = store.get("t")
    assert record is not None and record.result is not None
    spend = record.result["spend"]
    assert (spend["calls"], spend["tokens"]) == (3, 3030)  # 2 replayed + 1 live, each once


def test_a_requeue_with_budget_extra_goes_on_from_what_was_spent(
    store: SqlStore, store_url: str, effect_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    submit(task("t", effect_log.parent, budget={"tokens": 1200}), store)
    first = StepModel([costing(tool_turn("send", {"to": "ann"}))])  # 1010 of 1200: no room left
    assert Worker(store, model_resolver=fixed(first.model)).run(until_idle=True).finished == {
        "escalated": 1
    }
    [entry] = store.escalations()
    assert entry.reason.startswith("budget exhausted")
    assert entry.report.spend is not None and entry.report.spend["tokens"] == 1010
    assert "## Spend" in entry.report_md
    ann = str(reviewer_file(store, effect_log.parent))
    resolve = ("escalations", "resolve", str(entry.id), "--requeue", "--db", store_url,
               "--token-file", ann)  # fmt: skip
    code, out = donegate(capsys, *resolve, "--budget-extra", "dollars=1")
    assert code == 2 and "expected usd=AMOUNT or tokens=COUNT" in out
    code, out = donegate(capsys, *resolve, "--budget-extra", "usd=1")
    assert code == 2 and "the task's budget has no usd limit" in out
    code, out = donegate(capsys, *resolve, "--budget-extra", "tokens=3000")
    assert code == 0, out
    record = store.get("t")
    assert record is not None and record.spec["budget"] == {"tokens": 4200}
    again = StepModel([costing(tool_turn("send", {"to": "ann"})), costing(text_turn("Sent it."))])
    assert Worker(store, model_resolver=fixed(again.model)).run(until_idle=True).finished == {
        "done": 1
    }
    record = store.get("t")
    assert record is not None and record.result is not None
    assert (record.result["spend"]["calls"], record.result["spend"]["tokens"]) == (3, 3030)
    code, out = donegate(capsys, "tasks", "show", "t", "--db", store_url)
    assert code == 0 and "spend (budget tokens 4200):" in out
    assert "- agent function:steps: 3 call(s), 3000 in / 30 out tokens" in out
    code, out = donegate(capsys, "tasks", "show", "t", "--json", "--db", store_url)
    assert json.loads(out)["spend"]["tokens"] == 3030


def test_a_requeue_without_budget_extra_stops_again_at_once(
    store: SqlStore, effect_log: Path
) -> None:
    submit(task("t", effect_log.parent, budget={"tokens": 1200}), store)
    first = StepModel([costing(tool_turn("send", {"to": "ann"}))])
    Worker(store, model_resolver=fixed(first.model)).run(until_idle=True)
    [entry] = store.escalations()
    store.resolve(entry.id, requeue=True)
    never = StepModel([])  # the carried-over spend leaves no room: no call is made
    assert Worker(store, model_resolver=fixed(never.model)).run(until_idle=True).finished == {
        "escalated": 1
    }
    assert never.requests == []


def test_a_runs_priced_spend_reaches_the_stop_rows_and_stats(
    store: SqlStore, effect_log: Path
) -> None:
    from donegate.telemetry import breakdown

    prices = {"function:steps": {"input": 1.0, "output": 2.0}}  # USD per million tokens
    submit(task("t", effect_log.parent, budget={"usd": 1.0}, prices=prices), store)
    model = StepModel([costing(tool_turn("send", {"to": "ann"})), costing(text_turn("Sent."))])
    assert Worker(store, model_resolver=fixed(model.model)).run(until_idle=True).finished == {
        "done": 1
    }
    [row] = store.stop_rows(since=0)
    assert row.spend_usd == pytest.approx(2 * (1000 * 1.0 + 10 * 2.0) / 1e6)
    assert breakdown([row]).spend_usd == pytest.approx(row.spend_usd)
