"""`OtelSink`: run events as OpenTelemetry spans, following the GenAI semantic conventions.

One ``invoke_agent`` span per run (with ``gen_ai.agent.name``), a ``chat`` child per model call,
an ``execute_tool`` child per answered tool call, and a ``gate`` child per verdict of the
completion gate (`OtelSink.gate_round`). Model spans carry ``gen_ai.operation.name``,
``gen_ai.request.model``, ``gen_ai.response.finish_reasons`` with the standard values
(`FINISH_REASONS`: ``stop``, ``length``, ``content_filter``, ``tool_call``, ``error``), the
provider's raw reason on ``donegate.response.finish_reason`` and donegate's richer ending on
``donegate.ending``; the run span carries ``donegate.status``.

Convention version: semantic-conventions v1.36.0 by default (``gen_ai.system``); with
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` the latest GenAI conventions,
semantic-conventions-genai v0.1.0 (``gen_ai.provider.name``), as OpenTelemetry's own
instrumentations do. The tracer's schema URL says which (`SEMCONV_SCHEMAS`). The SDK
(exporters, sampling) is configured by the application or the ``OTEL_*`` environment.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

from donegate.config import semconv_opt_in
from donegate.errors import MissingExtra
from donegate.events import Event, ModelCalled, RunEnded, ToolCalled
from donegate.harness.gate import GateRound
from donegate.messages import Ending

__all__ = ["FINISH_REASONS", "LATEST", "SEMCONV_SCHEMAS", "OtelSink", "configure_tracing",
           "finish_reason", "semconv_version"]  # fmt: skip

FINISH_REASONS: dict[Ending, str | None] = {
    Ending.COMPLETE: "stop",
    Ending.EMPTY: "stop",
    Ending.TOOL_USE: "tool_call",
    Ending.TRUNCATED: "length",
    Ending.FILTERED: "content_filter",
    Ending.REFUSED: "content_filter",
    Ending.ERROR: "error",
    Ending.CONTEXT_EXCEEDED: "error",
    Ending.MALFORMED_TOOL_CALL: "error",
    Ending.PAUSED: None,
}
"""donegate's ending -> OpenTelemetry's ``gen_ai.response.finish_reasons`` value (the schema's
enum: stop, length, content_filter, tool_call, compaction, error). ``paused`` has none: its span
carries the provider's raw reason instead, as the convention allows any string."""
LATEST = "gen_ai_latest_experimental"
"""The ``OTEL_SEMCONV_STABILITY_OPT_IN`` token for the latest GenAI conventions."""
SEMCONV_SCHEMAS = {
    "1.36.0": "https://opentelemetry.io/schemas/1.36.0",
    "genai-0.1.0": "https://opentelemetry.io/schemas/1.45.0",
}
"""Convention version -> the tracer's schema URL (genai v0.1.0 builds on semconv v1.45.0)."""


def finish_reason(ending: Ending, raw: str | None) -> str:
    """The standard ``gen_ai.response.finish_reasons`` value for `ending` (the raw one if none)."""
    return FINISH_REASONS.get(ending) or raw or ending.value


def semconv_version() -> str:
    """The GenAI convention version the spans follow, from ``OTEL_SEMCONV_STABILITY_OPT_IN``."""
    return "genai-0.1.0" if LATEST in semconv_opt_in() else "1.36.0"


def _trace() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        raise MissingExtra("opentelemetry-api", "otel") from None
    return trace


def configure_tracing(service_name: str = "donegate-worker") -> str:
    """Install an SDK tracer provider unless the application already did; say where spans go.

    Spans go over OTLP/HTTP when ``opentelemetry-exporter-otlp-proto-http`` is installed (it
    reads ``OTEL_EXPORTER_OTLP_ENDPOINT``), else to stdout. ``OTEL_SERVICE_NAME`` wins over
    `service_name`.
    """
    trace = _trace()
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return "the application's tracer provider"
    try:
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        raise MissingExtra("opentelemetry-sdk", "otel") from None
    try:
        otlp = importlib.import_module("opentelemetry.exporter.otlp.proto.http.trace_exporter")
        exporter: Any = otlp.OTLPSpanExporter()
        where = "OTLP/HTTP"
    except ImportError:
        exporter = ConsoleSpanExporter()
        where = "stdout (install opentelemetry-exporter-otlp-proto-http for OTLP)"
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return where


class OtelSink:
    """An `EventSink` that turns one run's events into spans."""

    def __init__(
        self,
        *,
        task_id: str | None = None,
        task_type: str | None = None,
        tracer_provider: Any = None,
        agent_name: str | None = None,
    ) -> None:
        self._trace = _trace()
        self.semconv = semconv_version()
        """The convention version emitted (`semconv_version`)."""
        self.tracer = self._trace.get_tracer(
            "donegate", tracer_provider=tracer_provider, schema_url=SEMCONV_SCHEMAS[self.semconv]
        )
        self.task_id, self.task_type = task_id, task_type
        self.agent_name = agent_name or task_type or task_id or "donegate"
        """``gen_ai.agent.name``: given, else the task type, else the task id."""
        self.root: Any = None
        """The run's span, started by the first event (a run that never starts leaves none)."""
        self._context: Any = None
        self._model: str | None = None

    def _start(self) -> None:
        name = f"invoke_agent {self.task_type}" if self.task_type else "invoke_agent"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.agent_name,
        }
        if self.task_id is not None:
            attributes["donegate.task.id"] = self.task_id
        if self.task_type is not None:
            attributes["donegate.task.type"] = self.task_type
        self.root = self.tracer.start_span(name, attributes=attributes)
        self._context = self._trace.set_span_in_context(self.root)

    def close(self, status: str = "abandoned") -> None:
        """End the run's span if the run stopped without `RunEnded` (a lost lease, a crash)."""
        if self.root is not None and self.root.is_recording():
            self.root.set_attribute("donegate.status", status)
            self.root.end()

    def __call__(self, event: Event) -> None:
        if self.root is None:
            self._start()
        if isinstance(event, ModelCalled):
            self._model_span(event)
        elif isinstance(event, ToolCalled):
            self._tool_span(event)
        elif isinstance(event, RunEnded):
            result = event.result
            self.root.set_attribute("donegate.status", result.status.value)
            if event.ending is not None:
                self.root.set_attribute("donegate.ending", event.ending.value)
            if self._model is not None:
                self.root.set_attribute("gen_ai.request.model", self._model)
            self.root.set_attribute("gen_ai.usage.input_tokens", result.usage.input_tokens)
            self.root.set_attribute("gen_ai.usage.output_tokens", result.usage.output_tokens)
            self.root.set_attribute("donegate.model_calls", result.model_calls)
            self.root.end()

    def _model_span(self, event: ModelCalled) -> None:
        turn = event.turn
        self._model = event.model
        end = time.time_ns()
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": event.model,
            "gen_ai.response.finish_reasons": [finish_reason(turn.ending, turn.raw_reason)],
            "gen_ai.usage.input_tokens": turn.usage.input_tokens,
            "gen_ai.usage.output_tokens": turn.usage.output_tokens,
            "donegate.ending": turn.ending.value,
            "donegate.step": event.step,
        }
        if turn.raw_reason is not None:
            attributes["donegate.response.finish_reason"] = turn.raw_reason
        provider, sep, _ = event.model.partition(":")  # donegate's "provider:name" model string
        if sep and provider:
            key = "gen_ai.provider.name" if self.semconv != "1.36.0" else "gen_ai.system"
            attributes[key] = provider
        span = self.tracer.start_span(
            f"chat {event.model}",
            context=self._context,
            start_time=end - int(event.duration_s * 1e9),
            attributes=attributes,
        )
        if turn.model:
            span.set_attribute("gen_ai.response.model", turn.model)
        if turn.response_id:
            span.set_attribute("gen_ai.response.id", turn.response_id)
        if turn.usage.cache_read_tokens or turn.usage.cache_write_tokens:  # semconv names
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", turn.usage.cache_read_tokens)
            span.set_attribute(
                "gen_ai.usage.cache_creation.input_tokens", turn.usage.cache_write_tokens
            )
        span.end(end_time=end)

    def _tool_span(self, event: ToolCalled) -> None:
        record = event.record
        if record.started_at is not None and record.ended_at is not None:
            start, end = int(record.started_at * 1e9), int(record.ended_at * 1e9)
        else:  # answered by the loop itself (not run): a point at the moment it was answered
            end = time.time_ns()
            start = end - int(record.duration_s * 1e9)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.call.name,
            "gen_ai.tool.call.id": event.call.id,
            "donegate.step": event.step,
            "donegate.tool.executed": event.executed,
            "donegate.tool.is_error": event.result.is_error,
        }
        if event.idempotency_key is not None:
            attributes["donegate.idempotency_key"] = event.idempotency_key
        span = self.tracer.start_span(
            f"execute_tool {event.call.name}",
            context=self._context,
            start_time=start,
            attributes=attributes,
        )
        span.end(end_time=end)

    def gate_round(self, round: GateRound) -> None:
        """The completion gate's verdict on one claim, as its own span (pass it as
        ``on_round``)."""
        if self.root is None:
            self._start()
        failed = [c.name for c in round.checks if not c.passed]
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "donegate.gate",
            "donegate.gate.verdict": round.verdict.action,
            "donegate.gate.round": round.number,
            "donegate.gate.via": round.via,
            "donegate.gate.checks": len(round.checks),
            "donegate.gate.checks_failed": failed,
            "donegate.gate.problems": list(round.problems),
            "donegate.step": round.step,
        }
        span = self.tracer.start_span("gate", context=self._context, attributes=attributes)
        span.end()
