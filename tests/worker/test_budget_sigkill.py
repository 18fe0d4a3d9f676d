"""A task's budget across a real SIGKILL: the worker process is killed while a side effect hangs;
the worker that resumes it replays the journaled turn and charges it once (issue 31)."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from donegate.store.sql import SqlStore
from donegate.worker import submit
from tests.worker.chaos import python_worker, worker_env
from tests.worker.effects import DELAY_ENV
from tests.worker.helpers import SEND_TOOL, task

TURN_USAGE = {"input_tokens": 1000, "output_tokens": 10}


def _until(done: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _spawn(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    out = open(log, "ab")  # noqa: SIM115 - lives with the process
    return subprocess.Popen(python_worker(*args), env=env, stdout=out, stderr=out)


@pytest.mark.slow
def test_a_sigkilled_worker_resumed_charges_each_journaled_turn_once(
    store: SqlStore, store_url: str, tmp_path: Path, effect_log: Path
) -> None:
    script = tmp_path / "three.yaml"
    script.write_text(
        yaml.safe_dump(
            {
                "prompt": "send ann and cy the news",
                "tools": {"send": {"returns": "sent", "side_effect": True}},
                "turns": [
                    {"tool_call": "send", "args": {"to": "ann"}, "usage": TURN_USAGE},
                    {"tool_call": "send", "args": {"to": "cy"}, "usage": TURN_USAGE},
                    {"text": "Sent both.", "usage": TURN_USAGE},
                ],
            }
        )
    )
    spec = task("k", tmp_path, model=f"script:{script}", tools=[SEND_TOOL])
    submit({**spec, "budget": {"tokens": 100_000}}, store)
    slow = worker_env(tmp_path, effect_log, **{DELAY_ENV: "30"})  # the first send hangs
    first = _spawn(slow, tmp_path / "w1.log", "--db", store_url, "--lease", "1")
    try:
        _until(lambda: effect_log.with_name(effect_log.name + ".calls").exists())
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    time.sleep(1.5)  # the lease expires
    env = worker_env(tmp_path, effect_log)
    second = _spawn(env, tmp_path / "w2.log", "--db", store_url, "--until-idle", "--lease", "5")
    assert second.wait(120) == 0, (tmp_path / "w2.log").read_text()
    record = store.get("k")
    assert record is not None and record.status == "done", record
    assert record.result is not None
    spend = record.result["spend"]
    # three model calls in all: the first, journaled before the kill and replayed, counted once
    assert (spend["calls"], spend["tokens"]) == (3, 3 * 1010), spend
