"""The options every command that talks to Temporal takes (``--engine temporal``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from donegate.errors import UserError

__all__ = ["temporal_options"]

# Literal, not imported: the CLI must not import the engine (nor temporalio) to build --help.
_ADDRESS, _NAMESPACE, _QUEUE = "127.0.0.1:7233", "default", "donegate"


def temporal_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--temporal-address``, ``--namespace`` and ``--task-queue``."""
    for option in reversed(
        (
            click.option(
                "--temporal-address",
                default=_ADDRESS,
                show_default=True,
                help="Temporal: the frontend's host:port.",
            ),
            click.option(
                "--namespace", default=_NAMESPACE, show_default=True, help="Temporal: namespace."
            ),
            click.option(
                "--task-queue", default=_QUEUE, show_default=True, help="Temporal: task queue."
            ),
        )
    ):
        fn = option(fn)
    return fn


def start_workflow(task_id: str, address: str, namespace: str, task_queue: str) -> bool:
    """Start stored task `task_id`'s workflow; False when one with its id ran or runs."""
    import asyncio

    from donegate.worker.temporal import Target, connect, start_task

    async def start() -> bool:
        target = Target(address=address, namespace=namespace, task_queue=task_queue)
        return await start_task(await connect(target), task_id, task_queue=task_queue)

    try:
        return asyncio.run(start())
    except click.ClickException:
        raise
    except Exception as exc:
        if isinstance(exc, UserError):
            raise UserError(
                f"{task_id}: stored, but no workflow started: {exc}; submit it again once "
                "Temporal answers"
            ) from None
        raise


def wake(store: Any, task_id: str, action: str, *, by: str = "", escalation: int = 0) -> None:
    """After a decision is written: wake the task's workflow if it runs on Temporal."""
    from donegate.worker.temporal.engine import send_decision

    note = send_decision(store.get(task_id), action, by=by, escalation=escalation)
    if note is not None:
        click.echo(note, err=True)
