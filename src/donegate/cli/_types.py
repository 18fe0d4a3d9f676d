"""Option and argument types shared by the commands: bad values are refused by click itself.

A refused value is a click usage error, which `donegate.cli.main` prints as one line naming the
command and the option (exit 2), before any file is read or any store is opened.
"""

from __future__ import annotations

import math
import os
from typing import Any

import click

from donegate.config import ISOLATION_ENV, ISOLATION_MODES
from donegate.errors import UserError

__all__ = [
    "COUNT",
    "ESCALATION",
    "PORT",
    "SINCE",
    "STATUS",
    "TASK_ID",
    "EscalationRef",
    "isolation_option",
]

PORT = click.IntRange(0, 65535)
"""A TCP port; 0 asks the system for a free one."""
COUNT = click.IntRange(min=1)
"""A count that must be at least one (limits, attempts, steps)."""
STATUS = click.IntRange(100, 599)
"""An HTTP status code."""


def _task_id_problem(text: str) -> str | None:
    # imported here: the task-file models (pydantic) load only when an id is given
    from donegate.records.task import task_id_problem

    return task_id_problem(text)


class _TaskId(click.ParamType):  # type: ignore[type-arg]  # generic only in click >= 8.2
    """A task id, ``[A-Za-z0-9._-]{1,128}``, checked before any store is opened."""

    name = "ID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        problem = _task_id_problem(text)
        if problem is not None:
            self.fail(problem, param, ctx)
        return text


TASK_ID = _TaskId()


EscalationRef = int | str
"""An escalation number, or a task id standing for that task's newest escalation."""


class _Escalation(click.ParamType):  # type: ignore[type-arg]
    """An escalation number (``3``) or the id of the escalated task (``fix-mean``)."""

    name = "ID"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> EscalationRef:
        if isinstance(value, int):
            return value
        text = str(value)
        if text.isascii() and text.isdigit() and len(text) <= 18:
            return int(text)
        problem = _task_id_problem(text)
        if problem is not None:
            self.fail(f"expected an escalation number or a task id: {problem}", param, ctx)
        return text


ESCALATION = _Escalation()


class _Since(click.ParamType):  # type: ignore[type-arg]
    """A time window: a positive number and a unit, ``90s``, ``30m``, ``1h``, ``2d``, ``1w``."""

    name = "WINDOW"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from donegate.errors import UserError
        from donegate.telemetry.stats import parse_since

        text = str(value)
        try:
            seconds = parse_since(text)
        except UserError:
            self.fail(
                f"{text!r}: expected a number and a unit (s, m, h, d, w), e.g. 1h", param, ctx
            )
        if not math.isfinite(seconds) or seconds <= 0:
            self.fail(f"{text!r}: the window must be finite and longer than zero", param, ctx)
        return text


SINCE = _Since()


def _isolation(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Probe the backend now: ``sandbox`` where bwrap cannot start refuses to start (exit 2).

    The choice is put in the environment, so the whole process and what it starts (an agent
    CLI's hooks under ``exec``) judge under the same isolation.
    """
    from donegate.sandbox import resolve  # here: a command's --help does not import the sandbox

    try:
        resolve(value)
    except UserError as exc:
        raise click.UsageError(str(exc), ctx) from None
    if value is not None:
        os.environ[ISOLATION_ENV] = value


def isolation_option(fn: Any) -> Any:
    """``--isolation auto|sandbox|process`` (default: ``$DONEGATE_ISOLATION``, else auto)."""
    return click.option(
        "--isolation",
        type=click.Choice(ISOLATION_MODES),
        default=None,
        expose_value=False,
        callback=_isolation,
        help="Where checks (and the agent's commands) run: auto (the sandbox when bwrap works "
        "here), sandbox (bubblewrap; refuse to start without it) or process.",
    )(fn)
