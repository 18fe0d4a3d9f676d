"""Telemetry: OpenTelemetry spans, Prometheus metrics and the stop-reason breakdown.

`OtelSink` and `WorkerMetrics` import their SDKs only when built (``pip install
"donegate[otel]"``); `breakdown` is plain Python over the store's stop rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from donegate.telemetry.stats import Breakdown, Signal, breakdown, parse_since

if TYPE_CHECKING:
    from donegate.telemetry.otel import OtelSink
    from donegate.telemetry.prometheus import WorkerMetrics

__all__ = ["Breakdown", "OtelSink", "Signal", "WorkerMetrics", "breakdown", "parse_since"]


def __getattr__(name: str) -> Any:
    if name == "OtelSink":
        from donegate.telemetry.otel import OtelSink

        return OtelSink
    if name == "WorkerMetrics":
        from donegate.telemetry.prometheus import WorkerMetrics

        return WorkerMetrics
    raise AttributeError(name)
