"""The rich console every command prints through.

Lines are never wrapped (``soft_wrap``): a path, a command or an id printed by donegate can be
pasted as printed, at any terminal width and in a pipe (rich wraps at 80 columns there). Tables
still fit the width, and never cut a value mid-word (`print_rows`). Text that came from users,
tasks, models or files goes through `escape`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

__all__ = ["escape", "make_console", "print_rows"]

_MIN_LAST = 24
"""The narrowest the last (free-text) column may be before rows print as blocks instead."""


def make_console(*, stderr: bool = False) -> Console:
    """A console on stdout (results) or stderr (progress) that does not wrap lines."""
    return Console(stderr=stderr, soft_wrap=True)


def print_rows(console: Console, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A list of records (plain text, no markup), never cut mid-word at any width.

    Every column but the last keeps its values whole on one line (ids, names and times are
    copied from here). The last one (a reason, an error) wraps at spaces. When even that does
    not fit, each record prints as a line of its short values and its last value indented below.
    """
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    fixed = sum(widths[:-1]) + 2 * (len(headers) - 1)
    if fixed + min(widths[-1], _MIN_LAST) <= console.width:
        table = Table(*headers, box=None, pad_edge=False)
        for column in table.columns[:-1]:
            column.no_wrap = True
        table.columns[-1].overflow = "fold"  # only a word longer than the column is folded
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        console.print(table)
        return
    console.print("  ".join(headers[:-1]) + f"  ({headers[-1]} below)", markup=False)
    for row in rows:
        console.print("  ".join(row[:-1]), markup=False, highlight=False)
        if row[-1]:
            lines = textwrap.wrap(
                row[-1],
                max(console.width - 4, 20),
                break_long_words=False,
                break_on_hyphens=False,
            )
            for line in lines:
                console.print("    " + line, markup=False, highlight=False)
