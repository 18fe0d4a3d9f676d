"""`OtelSink`: run events as OpenTelemetry spans, following the GenAI semantic conventions.

One ``invoke_agent`` span per run, a ``chat`` child per model call and an ``execute_tool`` child
per answered tool call. Model spans carry ``gen_ai.operation.name``, ``gen_ai.request.model``,
``gen_ai.response.finish_reasons`` and ``gen_ai.usage.input_tokens``/``output_tokens``; every
span carries donegate's ``donegate.ending`` and the run span ``donegate.status``. The SDK
(exporters, sampling) is configured by the application or the ``OTEL_*`` environment.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

from donegate.errors import MissingExtra
from donegate.events import Event, ModelCalled, RunEnded, ToolCalled

__all__ = ["OtelSink", "configure_tracing"]


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
    ) -> None:
        self._trace = _trace()
        self.tracer = self._trace.get_tracer("donegate", tracer_provider=tracer_provider)
        self.task_id, self.task_type = task_id, task_type
        self.root: Any = None
        """The run's span, started by the first event (a run that never starts leaves none)."""
        self._context: Any = None
        self._model: str | None = None

    def _start(self) -> None:
        name = f"invoke_agent {self.task_type}" if self.task_type else "invoke_agent"
        attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent"}
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
        span = self.tracer.start_span(
            f"chat {event.model}",
            context=self._context,
            start_time=end - int(event.duration_s * 1e9),
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": event.model,
                "gen_ai.response.finish_reasons": [turn.raw_reason or turn.ending.value],
                "gen_ai.usage.input_tokens": turn.usage.input_tokens,
                "gen_ai.usage.output_tokens": turn.usage.output_tokens,
                "donegate.ending": turn.ending.value,
                "donegate.step": event.step,
            },
        )
        if turn.model:
            span.set_attribute("gen_ai.response.model", turn.model)
        if turn.response_id:
            span.set_attribute("gen_ai.response.id", turn.response_id)
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
