"""The stop-reason breakdown behind ``donegate stats``, and the spikes worth an alert.

Seed 002: a spike in runs hitting the step limit, truncated finals, or text-only stops with
checklist items still open is a leading indicator of premature stops. Each signal's rate in the
window is compared with its rate over the seven windows before it; a signal is flagged when it
has at least `min_count` runs and its rate is both meaningful (5 points above the baseline) and
at least double it. With no baseline, a rate of 10% or more is flagged.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from donegate.errors import UserError
from donegate.messages import Ending
from donegate.records.status import Status
from donegate.store.base import StopRow

__all__ = ["SIGNALS", "Breakdown", "Signal", "breakdown", "parse_since"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str) -> float:
    """``90s``, ``30m``, ``1h``, ``2d``, ``1w`` -> seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if match is None:
        raise UserError(f"--since {text!r}: expected a number and a unit (s, m, h, d, w), e.g. 1h")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _max_steps(r: StopRow) -> bool:
    return r.loop_status == Status.MAX_STEPS


def _truncated(r: StopRow) -> bool:
    return r.ending == Ending.TRUNCATED or r.loop_status == Status.TRUNCATED


def _open_text_stop(r: StopRow) -> bool:
    return r.ending == Ending.COMPLETE and r.open_items > 0


SIGNALS: dict[str, tuple[str, Callable[[StopRow], bool]]] = {
    "max_steps": ("runs that hit the step limit", _max_steps),
    "truncated": ("truncated finals", _truncated),
    "open_text_stop": ("text-only stops with open checklist items", _open_text_stop),
}
"""Each signal: a description and the test a stop row passes."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Signal:
    """One leading indicator in the window."""

    name: str
    """A key of `SIGNALS`."""
    description: str
    """What it counts."""
    count: int
    """Runs in the window that show it."""
    rate: float
    """Its share of the window's runs."""
    baseline_rate: float | None
    """Its share over the seven windows before (None with no runs then)."""
    spike: bool
    """True when it should be looked at."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Breakdown:
    """Stop reasons in one window."""

    total: int
    """Runs that ended in the window."""
    by_reason: list[tuple[str, str, str, int]]
    """``(task type, status, ending or loop status, count)``, most frequent first."""
    signals: list[Signal]
    """The leading indicators, spiking or not."""
    mean_turns: float
    """Average model calls per run."""
    mean_continuations: float
    """Average automatic continuations per run."""
    p50_duration_s: float
    """Median run time."""
    p95_duration_s: float
    """95th-percentile run time."""
    spend_usd: float = 0.0
    """What the window's runs' model calls cost, in US dollars (priced calls only)."""


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def breakdown(
    window: Sequence[StopRow], baseline: Sequence[StopRow] = (), *, min_count: int = 3
) -> Breakdown:
    """Count `window`'s stops by reason and flag signals that spiked against `baseline`."""
    reasons = Counter(
        (r.task_type or "-", r.status, r.loop_status or r.ending or "-") for r in window
    )
    total = len(window)
    signals = []
    for name, (description, test) in SIGNALS.items():
        count = sum(1 for r in window if test(r))
        rate = count / total if total else 0.0
        base = sum(1 for r in baseline if test(r)) / len(baseline) if baseline else None
        if count < min_count:
            spike = False
        elif base is None:
            spike = rate >= 0.10
        else:
            spike = rate >= 2 * base and rate - base >= 0.05
        signals.append(
            Signal(
                name=name,
                description=description,
                count=count,
                rate=rate,
                baseline_rate=base,
                spike=spike,
            )
        )
    return Breakdown(
        total=total,
        by_reason=[(t, s, e, n) for (t, s, e), n in reasons.most_common()],
        signals=signals,
        mean_turns=sum(r.turns for r in window) / total if total else 0.0,
        mean_continuations=sum(r.continuations for r in window) / total if total else 0.0,
        p50_duration_s=_percentile([r.duration_s for r in window], 0.5),
        p95_duration_s=_percentile([r.duration_s for r in window], 0.95),
        spend_usd=round(sum(r.spend_usd for r in window), 8),
    )
