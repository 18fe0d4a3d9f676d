"""`WorkerMetrics`: Prometheus metrics of the tasks a worker finished.

``donegate_tasks_total{status, ending, task_type}`` counts terminal outcomes (the stop-reason
breakdown, live); ``donegate_spend_usd_total{model, task_type}`` adds up what each run's model
calls cost (a resumed run's replayed turns included once: the lost run never reported);
histograms track turns, continuations and durations by task type, so an alert can fire on the
same spikes ``donegate stats`` flags.
"""

from __future__ import annotations

from typing import Any

from donegate.errors import MissingExtra
from donegate.results import Spend
from donegate.store.base import RunOutcome

__all__ = ["WorkerMetrics"]


def _prometheus() -> Any:
    try:
        import prometheus_client
    except ImportError:
        raise MissingExtra("prometheus-client", "otel") from None
    return prometheus_client


class WorkerMetrics:
    """Counters and histograms fed by `observe` (a `donegate.worker.Worker` observer)."""

    def __init__(self, registry: Any = None) -> None:
        prom = _prometheus()
        self._prom = prom
        self.registry = registry if registry is not None else prom.CollectorRegistry()
        self.tasks = prom.Counter(
            "donegate_tasks",
            "Tasks that reached a terminal status, by status, ending and task type.",
            ["status", "ending", "task_type"],
            registry=self.registry,
        )
        self.spend = prom.Counter(
            "donegate_spend_usd",
            "US dollars spent on model calls, by model and task type.",
            ["model", "task_type"],
            registry=self.registry,
        )
        self.turns = prom.Histogram(
            "donegate_task_turns",
            "Model calls per finished run.",
            ["task_type"],
            buckets=(1, 2, 3, 5, 8, 13, 21, 34, 55),
            registry=self.registry,
        )
        self.continuations = prom.Histogram(
            "donegate_task_continuations",
            "Automatic continuations per finished run.",
            ["task_type"],
            buckets=(0, 1, 2, 3, 4, 6),
            registry=self.registry,
        )
        self.duration = prom.Histogram(
            "donegate_task_duration_seconds",
            "Wall time per finished run.",
            ["task_type", "status"],
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600),
            registry=self.registry,
        )

    def observe(self, task_type: str | None, outcome: RunOutcome) -> None:
        """Count one recorded outcome."""
        kind = task_type or "-"
        ending = outcome.loop_status or outcome.ending or "-"
        self.tasks.labels(outcome.status, ending, kind).inc()
        self.turns.labels(kind).observe(outcome.model_calls)
        self.continuations.labels(kind).observe(outcome.continuations)
        self.duration.labels(kind, outcome.status).observe(outcome.duration_s)
        for line in Spend.from_data(outcome.summary.get("charged")).lines:
            if line.usd:
                self.spend.labels(line.model, kind).inc(line.usd)

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        """Serve ``/metrics`` on `port` from a background thread."""
        self._prom.start_http_server(port, addr=addr, registry=self.registry)

    def text(self) -> str:
        """The exposition text (tests, a one-off scrape)."""
        data: bytes = self._prom.generate_latest(self.registry)
        return data.decode()
