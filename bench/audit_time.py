"""Wall time of a full `donegate audit` (16 scenarios, 4 at a time) of two programs on 2 cores.

Baselines in the same run: the naive openai-SDK loop (ends on any tool-less turn) and the loop
built on `donegate.run` behind a gate, both from tests/testing/audit_programs/. The issue's bound
is 60 s for a full audit; the ratio printed is time / 60 s.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from donegate.testing.audit import audit

PROGRAMS = Path(__file__).resolve().parents[1] / "tests" / "testing" / "audit_programs"


def main() -> None:
    for name in ("naive_loop.py", "gated_loop.py"):
        started = time.monotonic()
        report = audit([sys.executable, str(PROGRAMS / name)], timeout=30)
        wall = time.monotonic() - started
        n = len(report.scenarios)
        print(f"{name}: {n} scenarios in {wall:.1f} s ({wall / 60:.2f}x the 60 s bound)")


if __name__ == "__main__":
    main()
