"""Telemetry: the stop-reason breakdown (OpenTelemetry and Prometheus sinks follow)."""

from __future__ import annotations

from donegate.telemetry.stats import Breakdown, Signal, breakdown, parse_since

__all__ = ["Breakdown", "Signal", "breakdown", "parse_since"]
