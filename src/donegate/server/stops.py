"""Stop reasons: ``donegate stats``'s breakdown over a chosen window and task type, a chart of
how runs ended over that window, and the spike flags (seed 002's leading indicators).

The breakdown is `donegate.telemetry.stats.breakdown` over the same rows ``donegate stats``
reads (the window, and the seven windows before it as the baseline). The chart is SVG built
here from counts, so it needs no script and no chart library.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from donegate.errors import UserError
from donegate.records.status import TASK_OUTCOMES
from donegate.server._web import Web, duration, fmt_time
from donegate.store import StopRow
from donegate.telemetry.stats import SIGNALS, breakdown, parse_since

__all__ = ["WINDOWS", "Bar", "Chart", "chart", "routes"]

WINDOWS = ("1h", "6h", "24h", "7d", "30d")
"""The windows the page offers (any ``--since`` value works in the URL)."""
BUCKETS = 24
"""Bars in the chart."""
SERIES = TASK_OUTCOMES
"""Stacked in this order; any other status is counted as ``other``."""
_W, _H, _LEFT, _BOTTOM, _TOP = 760, 240, 40, 30, 24


@dataclass(frozen=True, kw_only=True, slots=True)
class Bar:
    """One rectangle of the chart."""

    x: float
    y: float
    width: float
    height: float
    series: str
    """The status it counts (its CSS class)."""
    title: str
    """Its tooltip."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Chart:
    """The SVG's geometry: bars, signal marks, axis labels."""

    width: int
    height: int
    bars: list[Bar]
    marks: list[tuple[float, float, int, bool, str]]
    """``(x, y, count, spiking, title)``: runs in a bucket that show a leading indicator."""
    y_ticks: list[tuple[float, int]]
    x_labels: list[tuple[float, str, str]]
    """``(x, text, text-anchor)``."""
    peak: int


def chart(
    rows: Sequence[StopRow], *, start: float, end: float, spiking: set[str], buckets: int = BUCKETS
) -> Chart:
    """Runs that ended per time bucket, stacked by status, with their leading-indicator counts."""
    span = max(end - start, 1.0)
    counts = [dict.fromkeys((*SERIES, "other"), 0) for _ in range(buckets)]
    signals = [0] * buckets
    hot = [False] * buckets
    for r in rows:
        if not start <= r.at <= end:
            continue
        i = min(buckets - 1, int((r.at - start) / span * buckets))
        counts[i][r.status if r.status in SERIES else "other"] += 1
        shown = [name for name, (_, test) in SIGNALS.items() if test(r)]
        if shown:
            signals[i] += 1
            hot[i] = hot[i] or any(name in spiking for name in shown)
    peak = max([sum(c.values()) for c in counts] + [1])
    plot_w = _W - _LEFT - 10
    plot_h = _H - _BOTTOM - _TOP
    step = plot_w / buckets
    bars: list[Bar] = []
    marks: list[tuple[float, float, int, bool, str]] = []
    for i, bucket in enumerate(counts):
        x = _LEFT + i * step + 1
        y = float(_TOP + plot_h)
        b_start = start + i * span / buckets
        label = f"{fmt_time(b_start)} +{duration(span / buckets)}"
        for series, n in bucket.items():
            if not n:
                continue
            h = n / peak * plot_h
            y -= h
            bars.append(
                Bar(
                    x=round(x, 1),
                    y=round(y, 1),
                    width=round(step - 2, 1),
                    height=round(h, 1),
                    series=series,
                    title=f"{label}: {n} {series}",
                )
            )
        if signals[i]:
            marks.append(
                (
                    round(x + (step - 2) / 2, 1),
                    round(max(y - 10, _TOP - 8), 1),
                    signals[i],
                    hot[i],
                    f"{label}: {signals[i]} run(s) with a leading indicator",
                )
            )
    ticks = sorted({0, peak // 2, peak})
    return Chart(
        width=_W,
        height=_H,
        bars=bars,
        marks=marks,
        y_ticks=[(round(_TOP + plot_h - t / peak * plot_h, 1), t) for t in ticks],
        x_labels=[
            (
                round(_LEFT + i * step, 1),
                fmt_time(start + i * span / buckets)[5:16],
                "start" if i == 0 else "end" if i == buckets else "middle",
            )
            for i in range(0, buckets + 1, max(1, buckets // 4))
        ],
        peak=peak,
    )


def routes(web: Web) -> list[BaseRoute]:
    """``/stops``."""

    def stops(request: Request) -> Response:
        window = request.query_params.get("window", "24h")
        task_type = request.query_params.get("type", "")[:100]
        try:
            window_s = parse_since(window)
        except UserError as exc:
            raise HTTPException(400, str(exc).replace("--since", "window")) from None
        now = time.time()
        rows = web.store.stop_rows_of(since=now - 8 * window_s, task_type=task_type or None)
        start = now - window_s
        in_window = [r for r in rows if r.at >= start]
        result = breakdown(in_window, [r for r in rows if r.at < start])
        spiking = {s.name for s in result.signals if s.spike}
        return web.render(
            request,
            "stops.html",
            window=window,
            windows=WINDOWS if window in WINDOWS else (*WINDOWS, window),
            task_type=task_type,
            types=web.store.stop_types(),
            result=result,
            spiking=[s for s in result.signals if s.spike],
            chart=chart(in_window, start=start, end=now, spiking=spiking),
            series=(*SERIES, "other"),
        )

    return [Route("/stops", stops)]
