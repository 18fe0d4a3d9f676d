"""``donegate stats [--since 1h]``: the stop-reason breakdown, with spikes flagged.

Exits 1 when a signal spiked, so a cron job or CI step can alert on it.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from donegate.cli._app import app
from donegate.cli._console import make_console
from donegate.cli._store import db_option, echo_json, store_from
from donegate.cli._types import SINCE
from donegate.telemetry.stats import Breakdown, breakdown, parse_since

__all__ = ["stats_command"]


@app.command("stats")
@click.option(
    "--since", default="1h", show_default=True, type=SINCE, help="The window: 30m, 1h, 2d..."
)
@click.option("--json", "as_json", is_flag=True)
@db_option
def stats_command(since: str, as_json: bool, db: str | None) -> None:
    """How runs ended in the window, by task type, status and ending; spikes are flagged."""
    window_s = parse_since(since)
    now = time.time()
    store = store_from(db, existing=True)
    try:
        rows = store.stop_rows(since=now - 8 * window_s)
        counts = store.counts()
    finally:
        store.close()
    start = now - window_s
    result = breakdown([r for r in rows if r.at >= start], [r for r in rows if r.at < start])
    spiking = [s for s in result.signals if s.spike]
    if as_json:
        echo_json({"since": since, "tasks": counts, **asdict(result)})
    else:
        _print(make_console(), since, counts, result)
    if spiking:
        sys.exit(1)


def _print(console: Console, since: str, counts: dict[str, int], result: Breakdown) -> None:
    queue = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "empty"
    console.print(f"[bold]last {escape(since)}[/]: {result.total} runs ended; queue: {queue}")
    table = Table("task type", "status", "ending", "runs", box=None)
    for task_type, status, ending, n in result.by_reason:
        table.add_row(escape(task_type), status, ending, str(n))
    console.print(table)
    console.print(
        f"turns {result.mean_turns:.1f} avg, continuations {result.mean_continuations:.2f} avg, "
        f"duration p50 {result.p50_duration_s:.2f}s p95 {result.p95_duration_s:.2f}s, "
        f"spend ${result.spend_usd:.4f}"
    )
    for s in result.signals:
        base = "no baseline" if s.baseline_rate is None else f"baseline {s.baseline_rate:.0%}"
        mark = "[bold red]SPIKE[/]" if s.spike else "ok"
        console.print(f"  {mark:<5} {escape(s.description)}: {s.count} ({s.rate:.0%}; {base})")
