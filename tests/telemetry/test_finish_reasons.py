"""The standard OpenTelemetry vocabulary: every ending's ``gen_ai.response.finish_reasons``
value, the raw reason beside it, the convention version switch, and the gate's verdict span."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from donegate.events import ModelCalled
from donegate.harness.runner import run_task
from donegate.harness.spec import TaskSpec
from donegate.messages import Ending, Message, TextPart, ToolCall, Turn
from donegate.models.base import ModelRequest
from donegate.models.function import FunctionModel
from donegate.telemetry.otel import OtelSink

# ending -> (a provider's raw reason, the OTel standard value OTel's schema enum allows)
STANDARD = {
    Ending.COMPLETE: ("end_turn", "stop"),
    Ending.TOOL_USE: ("tool_calls", "tool_call"),
    Ending.TRUNCATED: ("max_tokens", "length"),
    Ending.FILTERED: ("SAFETY", "content_filter"),
    Ending.REFUSED: ("refusal", "content_filter"),
    Ending.ERROR: ("500", "error"),
    Ending.EMPTY: ("stop", "stop"),
    Ending.CONTEXT_EXCEEDED: ("model_context_window_exceeded", "error"),
    Ending.MALFORMED_TOOL_CALL: ("MALFORMED_FUNCTION_CALL", "error"),
    Ending.PAUSED: ("pause_turn", "pause_turn"),  # no standard value: the raw reason
}


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def sink(exporter: InMemorySpanExporter, **kw: str) -> OtelSink:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OtelSink(tracer_provider=provider, **kw)


def turn(ending: Ending, raw: str) -> Turn:
    return Turn(message=Message(role="assistant", parts=(TextPart(text="x"),)), ending=ending,
                raw_reason=raw)  # fmt: skip


def test_every_ending_carries_the_standard_finish_reason(exporter: InMemorySpanExporter) -> None:
    assert set(STANDARD) == set(Ending)  # a new ending must be given its standard value here
    otel = sink(exporter, task_id="t")
    for step, (ending, (raw, _)) in enumerate(STANDARD.items(), 1):
        otel(ModelCalled(step=step, model="openai:gpt-x", turn=turn(ending, raw), duration_s=0.0))
    chats = [dict(s.attributes or {}) for s in exporter.get_finished_spans()]
    got = {
        a["donegate.ending"]: (
            a["donegate.response.finish_reason"],
            a["gen_ai.response.finish_reasons"][0],
        )
        for a in chats
    }
    assert got == {e.value: pair for e, pair in STANDARD.items()}


def test_the_default_convention_is_1_36_and_the_opt_in_is_the_genai_release(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
    old = sink(exporter, task_id="t")
    old(ModelCalled(step=1, model="openai:gpt-x", turn=turn(Ending.COMPLETE, "stop"),
                    duration_s=0.0))  # fmt: skip
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http, gen_ai_latest_experimental")
    new = sink(exporter, task_id="t")
    new(ModelCalled(step=1, model="openai:gpt-x", turn=turn(Ending.COMPLETE, "stop"),
                    duration_s=0.0))  # fmt: skip
    first, second = exporter.get_finished_spans()
    assert (old.semconv, new.semconv) == ("1.36.0", "genai-0.1.0")
    assert first.attributes is not None and second.attributes is not None
    assert (
        first.attributes["gen_ai.system"] == "openai"
        and "gen_ai.provider.name" not in first.attributes
    )
    assert (
        second.attributes["gen_ai.provider.name"] == "openai"
        and "gen_ai.system" not in second.attributes
    )
    assert first.instrumentation_scope is not None and second.instrumentation_scope is not None
    assert first.instrumentation_scope.schema_url.endswith("/1.36.0")
    assert second.instrumentation_scope.schema_url.endswith("/1.45.0")


def test_the_run_is_invoke_agent_and_each_gate_verdict_is_its_own_span(
    exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    def respond(request: ModelRequest) -> Turn:
        said = sum(m.role == "assistant" for m in request.messages)
        if said == 1:
            call = ToolCall.from_args(id="c1", name="write_file",
                                      arguments={"path": "done.txt", "content": "ok"})  # fmt: skip
            return Turn(message=Message(role="assistant", parts=(call,)), ending=Ending.TOOL_USE)
        return turn(Ending.COMPLETE, "end_turn")

    spec = TaskSpec(id="w", prompt="write done.txt", workdir=str(tmp_path), type="writer",
                    checks=[{"file_exists": "done.txt"}], tools=["write_file"])  # type: ignore[list-item]  # fmt: skip
    otel = sink(exporter, task_id="w", task_type="writer")
    result = run_task(spec, model=FunctionModel(respond), events=otel, on_round=otel.gate_round,
                      completion_tool=None, output_dir=tmp_path / "out")  # fmt: skip
    assert result.status == "done"
    spans = {s.name: s for s in exporter.get_finished_spans()}
    run = spans["invoke_agent writer"]
    assert run.attributes is not None and run.attributes["gen_ai.agent.name"] == "writer"
    gates = [s for s in exporter.get_finished_spans() if s.name == "gate"]
    verdicts = [(s.attributes or {})["donegate.gate.verdict"] for s in gates]
    assert verdicts == ["continue", "accept"]
    assert (gates[0].attributes or {})["donegate.gate.checks_failed"] == ("file_exists: done.txt",)
    assert all(g.parent is not None and g.parent.span_id == run.context.span_id for g in gates)
