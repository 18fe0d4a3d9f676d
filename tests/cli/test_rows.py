"""Lists never cut a value mid-word, at any width (issue 25: ids and reasons were cut at 80)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from donegate.cli._console import print_rows

HEADERS = ["id", "type", "status", "updated", "reason"]
ROWS = [
    [
        "a-rather-long-task-identifier-1",
        "nightly-maintenance",
        "escalated",
        "2026-12-02 04:42:51",
        "not done after 0 continuation(s): failed checks: run: false (exit code 1)",
    ],
    ["t", "-", "done", "2026-12-02 04:36:33", "every gate passed"],
]


@pytest.mark.parametrize("width", [40, 80, 100, 200])
def test_every_value_prints_whole_at_any_width(width: int) -> None:
    out = io.StringIO()
    print_rows(Console(file=out, width=width, soft_wrap=True), HEADERS, ROWS)  # as make_console
    text = out.getvalue()
    words = text.split()
    for row in ROWS:
        for value in row[:-1]:  # ids, names and times: whole, on one line
            assert any(value in line for line in text.splitlines()), (value, text)
        for word in row[-1].split():  # the reason wraps at spaces only
            assert word in words, (word, text)
    assert "…" not in text
