"""OpenTelemetry spans, Prometheus metrics and the stop-reason breakdown."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import donegate
from donegate.errors import MissingExtra, UserError
from donegate.events import Event, ToolCalled, fan_out
from donegate.messages import Ending, Message, TextPart, ToolCall, Turn, Usage
from donegate.models.base import ModelRequest
from donegate.models.function import FunctionModel
from donegate.store import RunOutcome, StopRow
from donegate.store.sql import open_store
from donegate.telemetry import breakdown, parse_since
from donegate.telemetry.otel import OtelSink
from donegate.telemetry.prometheus import WorkerMetrics
from donegate.tools import tool
from donegate.worker import Worker, submit


@tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: delivered"


def two_turns() -> FunctionModel:
    def respond(request: ModelRequest) -> Turn:
        if not any(m.role == "assistant" for m in request.messages):
            call = ToolCall.from_args(id="c1", name="lookup", arguments={"order_id": "7"})
            return Turn(
                message=Message(role="assistant", parts=(call,)),
                ending=Ending.TOOL_USE,
                raw_reason="tool_use",
                usage=Usage(input_tokens=100, output_tokens=20),
            )
        return Turn(
            message=Message(role="assistant", parts=(TextPart(text="Delivered."),)),
            ending=Ending.COMPLETE,
            raw_reason="end_turn",
            usage=Usage(input_tokens=150, output_tokens=5),
        )

    return FunctionModel(respond, name="anthropic:claude-test")


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A tracer provider recording finished spans in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_spans_follow_the_genai_conventions(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    sink = OtelSink(task_id="t1", task_type="support", tracer_provider=provider)
    result = donegate.run("where is order 7?", model=two_turns(), tools=[lookup], events=sink)
    assert result.complete
    finished = {s.name: s for s in exporter.get_finished_spans()}
    assert set(finished) == {
        "invoke_agent support",
        "chat anthropic:claude-test",
        "execute_tool lookup",
    }
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert [dict(s.attributes or {}) for s in chats] == [
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "anthropic:claude-test",
            "gen_ai.response.finish_reasons": ("tool_call",),
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": 20,
            "gen_ai.system": "anthropic",
            "donegate.response.finish_reason": "tool_use",
            "donegate.ending": "tool_use",
            "donegate.step": 1,
        },
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "anthropic:claude-test",
            "gen_ai.response.finish_reasons": ("stop",),
            "gen_ai.usage.input_tokens": 150,
            "gen_ai.usage.output_tokens": 5,
            "gen_ai.system": "anthropic",
            "donegate.response.finish_reason": "end_turn",
            "donegate.ending": "complete",
            "donegate.step": 2,
        },
    ]
    root = finished["invoke_agent support"]
    assert dict(root.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "support",
        "gen_ai.request.model": "anthropic:claude-test",
        "gen_ai.usage.input_tokens": 250,
        "gen_ai.usage.output_tokens": 25,
        "donegate.task.id": "t1",
        "donegate.task.type": "support",
        "donegate.status": "complete",
        "donegate.ending": "complete",
        "donegate.model_calls": 2,
    }
    for child in [*chats, finished["execute_tool lookup"]]:
        assert child.parent is not None and child.parent.span_id == root.context.span_id
    tool_attrs = dict(finished["execute_tool lookup"].attributes or {})
    assert tool_attrs["gen_ai.tool.name"] == "lookup" and tool_attrs["donegate.tool.executed"]


def test_metrics_count_terminal_status_by_ending_and_task_type() -> None:
    metrics = WorkerMetrics()
    metrics.observe(
        "migration", RunOutcome(status="failed", loop_status="max_steps", model_calls=50)
    )
    metrics.observe("migration", RunOutcome(status="done", loop_status="complete", model_calls=3))
    metrics.observe(None, RunOutcome(status="escalated", loop_status="gated", continuations=3))
    text = metrics.text()
    for line in (
        'donegate_tasks_total{ending="max_steps",status="failed",task_type="migration"} 1.0',
        'donegate_tasks_total{ending="complete",status="done",task_type="migration"} 1.0',
        'donegate_tasks_total{ending="gated",status="escalated",task_type="-"} 1.0',
        'donegate_task_turns_count{task_type="migration"} 2.0',
        'donegate_task_turns_sum{task_type="migration"} 53.0',
        'donegate_task_continuations_sum{task_type="-"} 3.0',
        'donegate_task_duration_seconds_count{status="done",task_type="migration"} 1.0',
    ):
        assert line in text, line


def test_a_worker_feeds_spans_and_metrics(
    tmp_path: Path, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    store = open_store(tmp_path / "t.db")
    submit({"id": "t", "prompt": "where is order 7?", "model": "f:x", "type": "support",
            "tools": [{"import": "tests.telemetry.test_telemetry:lookup", "side_effect": False}],
            "workdir": str(tmp_path), "closure": "model"}, store)  # fmt: skip
    metrics = WorkerMetrics()
    worker = Worker(
        store,
        model_resolver=lambda name, what: two_turns(),
        output_dir=tmp_path / "out",
        observers=[metrics.observe],
        sink_factory=lambda spec, lease: OtelSink(
            task_id=lease.task_id, task_type=spec.type, tracer_provider=provider
        ),
    )
    assert worker.run(until_idle=True).finished == {"done": 1}
    assert 'donegate_tasks_total{ending="complete",status="done",task_type="support"} 1.0' in (
        metrics.text()
    )
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == [
        "chat anthropic:claude-test",
        "chat anthropic:claude-test",
        "execute_tool lookup",
        "invoke_agent support",
    ]
    store.close()


def test_sdks_are_imported_lazily_and_missing_ones_name_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(MissingExtra, match=r'pip install "donegate\[otel\]"'):
        OtelSink()
    with pytest.raises(MissingExtra, match=r'pip install "donegate\[otel\]"'):
        WorkerMetrics()


def row(
    status: str, ending: str, loop_status: str, *, open_items: int = 0, at: float = 0
) -> StopRow:
    return StopRow(
        task_id="t", task_type="migration", status=status, ending=ending,
        loop_status=loop_status, open_items=open_items, turns=4, continuations=1,
        duration_s=2.0, at=at,
    )  # fmt: skip


def test_the_breakdown_flags_spikes_against_the_baseline() -> None:
    ok = row("done", "complete", "complete")
    capped = row("failed", "tool_use", "max_steps")
    cut = row("failed", "truncated", "truncated")
    early = row("escalated", "complete", "gated", open_items=2)
    window = [ok] * 10 + [capped] * 4 + [cut] * 2 + [early] * 3
    baseline = [ok] * 95 + [capped] * 5
    result = breakdown(window, baseline)
    assert result.total == 19
    assert result.by_reason[0] == ("migration", "done", "complete", 10)
    flagged = {s.name: s.spike for s in result.signals}
    # 4/19 = 21% against 5% before: a spike; 2 truncations are below min_count; 3 early stops
    # with open items and no such stop before: a spike.
    assert flagged == {"max_steps": True, "truncated": False, "open_text_stop": True}
    steady = breakdown([ok] * 95 + [capped] * 5, baseline)
    assert not any(s.spike for s in steady.signals)
    assert breakdown([]).total == 0


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("30m", 1800), ("1h", 3600), ("2d", 172800), ("1.5h", 5400)]
)
def test_since_takes_a_number_and_a_unit(text: str, seconds: float) -> None:
    assert parse_since(text) == seconds


def test_since_rejects_anything_else() -> None:
    with pytest.raises(UserError, match="--since '1 hour'"):
        parse_since("1 hour")


@pytest.mark.slow
def test_the_worker_command_emits_spans(tmp_path: Path) -> None:
    import subprocess

    from tests.worker.chaos import python_worker, worker_env
    from tests.worker.helpers import task

    db = tmp_path / "w.db"
    store = open_store(db)
    submit(task("t", tmp_path), store)
    store.close()
    env = worker_env(tmp_path, tmp_path / "effects.log")
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    command = python_worker("--db", str(db), "--until-idle", "--otel", "--metrics-port", "0")
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "spans go to stdout" in out.stderr and "1 claimed; 1 done" in out.stderr
    for name in ("invoke_agent mail", "chat script:send.yaml", "execute_tool send"):
        assert f'"name": "{name}"' in out.stdout, name


def test_a_run_that_stops_without_ending_closes_its_span(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    unused = OtelSink(tracer_provider=provider)
    unused.close()
    assert exporter.get_finished_spans() == ()  # a run that never started leaves no span
    sink = OtelSink(task_id="t", tracer_provider=provider)
    with pytest.raises(RuntimeError):
        donegate.run("go", model=two_turns(), tools=[lookup], events=fan_out(sink, explode))
    sink.close()
    [root] = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    assert (root.attributes or {})["donegate.status"] == "abandoned"


def explode(event: Event) -> None:
    if isinstance(event, ToolCalled):
        raise RuntimeError("the worker lost its lease")


def test_the_execute_tool_span_lasts_as_long_as_the_tool_ran(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    import time

    @tool(name="lookup")
    def slow_lookup(order_id: str) -> str:
        """Look an order up, slowly."""
        time.sleep(0.2)
        return f"order {order_id}: delivered"

    provider, exporter = spans
    events: list[Event] = []
    sink = OtelSink(task_id="t1", task_type="support", tracer_provider=provider)
    donegate.run(
        "where is order 7?", model=two_turns(), tools=[slow_lookup],
        events=fan_out(sink, events.append),
    )  # fmt: skip
    [span] = [s for s in exporter.get_finished_spans() if s.name == "execute_tool lookup"]
    [called] = [e for e in events if isinstance(e, ToolCalled)]
    assert span.start_time is not None and span.end_time is not None
    assert abs((span.end_time - span.start_time) / 1e9 - 0.2) < 0.05
    assert called.record.started_at is not None
    assert span.start_time == int(called.record.started_at * 1e9)


def test_the_spend_counter_adds_up_each_runs_own_charge_by_model() -> None:
    from donegate.messages import Usage
    from donegate.results import Spend, SpendLine

    metrics = WorkerMetrics()
    sonnet = SpendLine(model="anthropic:claude-sonnet-4-5", role="agent", calls=2,
                       usage=Usage(input_tokens=10, output_tokens=1), usd=0.25)  # fmt: skip
    judge = SpendLine(model="openai:gpt-4o-mini", role="verifier", calls=1, usd=0.125)
    unpriced = SpendLine(model="script", role="agent", calls=1, usd=None)
    charged = Spend(lines=(sonnet, judge, unpriced)).as_data()
    for _ in range(2):
        metrics.observe("support", RunOutcome(status="done", summary={"charged": charged}))
    text = metrics.text()
    for line in (
        'donegate_spend_usd_total{model="anthropic:claude-sonnet-4-5",task_type="support"} 0.5',
        'donegate_spend_usd_total{model="openai:gpt-4o-mini",task_type="support"} 0.25',
    ):
        assert line in text, line
    assert 'model="script"' not in text


def test_cache_tokens_use_the_genai_usage_names(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    cached = Usage(input_tokens=900, output_tokens=5, cache_read_tokens=600,
                   cache_write_tokens=200)  # fmt: skip

    def respond(request: ModelRequest) -> Turn:
        text = Message(role="assistant", parts=(TextPart(text="Delivered."),))
        return Turn(message=text, ending=Ending.COMPLETE, usage=cached)

    sink = OtelSink(task_id="t1", task_type="support", tracer_provider=provider)
    donegate.run("hi", model=FunctionModel(respond, name="anthropic:claude-test"), events=sink)
    [chat] = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.usage.input_tokens"] == 900
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 600
    assert attributes["gen_ai.usage.cache_creation.input_tokens"] == 200
