"""Worker processes, task files and waits shared by the Temporal tests."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from donegate.store.sql import SqlStore
from tests.worker.chaos import python_worker


def temporal_worker(db: Path | str, address: str, queue: str, *extra: str) -> list[str]:
    """``python -m donegate worker --engine temporal`` against `address`'s `queue`."""
    return python_worker(
        "--engine", "temporal", "--db", str(db), "--temporal-address", address,
        "--task-queue", queue, *extra,
    )  # fmt: skip


def spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    out = open(log, "ab")  # noqa: SIM115 - lives with the process
    return subprocess.Popen(command, env=env, stdout=out, stderr=out, start_new_session=True)


def write_task(tmp_path: Path, spec: dict[str, Any]) -> str:
    path = tmp_path / f"{spec['id']}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def wait_for(what: str, ready: Callable[[], bool], timeout_s: float = 60.0) -> None:
    """Poll `ready` until true; a clear failure naming `what` when it never is."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def status_of(store: SqlStore, task_id: str) -> str | None:
    record = store.get(task_id)
    return record.status if record is not None else None


def workflow_result(address: str, workflow_id: str, timeout_s: float = 60.0) -> Any:
    """The workflow's result (its task's final status), waited for."""

    async def result() -> Any:
        from temporalio.client import Client

        client = await Client.connect(address)
        return await asyncio.wait_for(client.get_workflow_handle(workflow_id).result(), timeout_s)

    return asyncio.run(result())


def workflow_query(address: str, workflow_id: str, query: str) -> Any:
    async def ask() -> Any:
        from temporalio.client import Client

        client = await Client.connect(address)
        return await client.get_workflow_handle(workflow_id).query(query)

    return asyncio.run(ask())
