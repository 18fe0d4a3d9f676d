"""The rich console every command prints through.

Lines are never wrapped (``soft_wrap``): a path, a command or an id printed by donegate can be
pasted as printed, at any terminal width and in a pipe (rich wraps at 80 columns there). Tables
still fit the width. Text that came from users, tasks, models or files goes through `escape`.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

__all__ = ["escape", "make_console"]


def make_console(*, stderr: bool = False) -> Console:
    """A console on stdout (results) or stderr (progress) that does not wrap lines."""
    return Console(stderr=stderr, soft_wrap=True)
