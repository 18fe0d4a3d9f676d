"""Review-UI page times over a big store: 10,000 tasks, 1,000 of them escalated.

The store is filled through its own API (submit, claim, journal two turns, finish), so every
row is what a worker writes: done tasks with their journal and summary, escalated ones with a
full report (attempts, failing check output, rounds, transcript) in the queue. Then a real
``donegate serve`` answers each page `--requests` times over HTTP on loopback; the script prints
p50 and p95 per page. The pages read through pagination and indexes, so a deep page costs what
the first does.

    .venv/bin/python bench/serve_pages.py [--tasks 10000] [--escalated 1000] [--requests 40]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from donegate.messages import Ending, Message, TextPart, ToolCall, ToolResult, Turn, Usage
from donegate.store import Outcome
from donegate.store.sql import SqlStore, open_store

TYPES = ("mail", "report", "refund", "migrate")


def _report(task_id: str, n: int) -> dict[str, Any]:
    output = "\n".join(f"test_case_{i} ... FAILED (expected 200, got 500)" for i in range(40))
    transcript = [
        {"role": "user", "parts": [{"kind": "text", "text": f"Fix the endpoints of {task_id}."}]},
        {
            "role": "assistant",
            "parts": [{"kind": "text", "text": "All endpoints are fixed and tests pass. " * 5}],
        },
    ]
    return {
        "kind": "donegate.escalation",
        "version": 1,
        "task_id": task_id,
        "reason": f"not done after 3 continuation(s): failed checks: unit tests ({n})",
        "prompt": f"Fix the endpoints of {task_id}.",
        "completion_condition": "every endpoint test passes",
        "continuations": 3,
        "max_continuations": 3,
        "model_calls": 6,
        "attempted": [
            {
                "index": i,
                "step": i + 1,
                "tool": "run_command",
                "arguments": {"command": "pytest -q"},
                "executed": True,
                "is_error": False,
                "output_tail": output[:500],
            }
            for i in range(3)
        ],
        "left": {
            "open_items": [{"item": "endpoint 5", "status": "open", "note": ""}],
            "failed_checks": [
                {"name": "unit tests", "kind": "run", "passed": False, "detail": "exit code 1",
                 "command": "pytest -q", "exit_code": 1, "output_tail": output}
            ],
        },
        "why_stuck": [
            {"round": r, "step": 2 * r, "via": "text", "claim": "All endpoints are fixed.",
             "problems": ["failed checks: unit tests (exit code 1)"], "verdict": "continue"}
            for r in range(1, 5)
        ],
        "state": {"checklist": [], "checks": [], "transcript": transcript},
    }  # fmt: skip


def fill(store: SqlStore, tasks: int, escalated: int) -> None:
    """Submit, claim, journal and finish `tasks` tasks; `escalated` of them, spread, escalate."""
    every = max(1, tasks // max(escalated, 1))
    call = ToolCall.from_args(id="c1", name="run_command", arguments={"command": "pytest -q"})
    for n in range(tasks):
        task_id = f"task-{n:05d}"
        task_type = TYPES[n % len(TYPES)]
        store.submit(task_id, {"id": task_id, "prompt": f"do {task_id}", "type": task_type},
                     type=task_type)  # fmt: skip
        lease = store.claim("bench", 600)
        assert lease is not None and lease.task_id == task_id
        first = Turn(
            message=Message(role="assistant", parts=(call,)),
            ending=Ending.TOOL_USE,
            raw_reason="tool_use",
            usage=Usage(input_tokens=900, output_tokens=40),
        )
        answer = ToolResult(call_id="c1", name="run_command", content="2 passed in 0.31s")
        result = Message.tool_results([answer])
        prompt = Message.user(f"do {task_id}")
        store.journal(
            lease, turn=(1, first), messages=[(0, prompt), (1, first.message), (1, result)]
        )
        claim = Message(role="assistant", parts=(TextPart(text="Done: both tests pass."),))
        stuck = escalated > 0 and n % every == 0 and n // every < escalated
        report = _report(task_id, n) if stuck else None
        store.finish(
            lease,
            Outcome(
                status="escalated" if stuck else "done",
                reason=report["reason"] if report else "every gate passed",
                ending="complete",
                loop_status="gated" if stuck else "complete",
                model_calls=2,
                continuations=3 if stuck else 0,
                input_tokens=1800,
                output_tokens=80,
                duration_s=0.5 + (n % 7) / 10,
                report=report,
                report_md=f"# {task_id}\n" if report else None,
            ),
            messages=[(2, claim)],
        )


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        response.read()
        assert response.status == 200, (url, response.status)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--escalated", type=int, default=1_000)
    parser.add_argument("--requests", type=int, default=40)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="donegate-serve-bench-"))
    db = f"sqlite:///{root / 'bench.db'}"
    store = open_store(db)
    started = time.perf_counter()
    fill(store, args.tasks, args.escalated)
    filled_s = time.perf_counter() - started
    counts = store.counts()
    queue = store.queue_page(limit=50)
    deep = store.task_page(limit=50)
    depth = 1
    while depth < 61 and deep.next is not None:  # a cursor up to 60 pages deep
        cursor = deep.next
        deep = store.task_page(limit=50, after=cursor)
        depth += 1
    store.close()
    print(f"filled {counts} ({len(queue)} on the queue's first page) in {filled_s:.1f}s")

    from donegate.server.tasks import encode_cursor

    port = _port()
    server = subprocess.Popen(
        [sys.executable, "-m", "donegate", "serve", "--db", db, "--port", str(port)],
        env={**os.environ, "DONEGATE_HOME": str(root / "home")},
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                _get(f"{base}/healthz")
                break
            except OSError:
                time.sleep(0.1)
        middle = queue[len(queue) // 2].id
        pages = {
            "escalations (queue, first page)": "/escalations",
            "escalations (page 10)": f"/escalations?after={queue[0].id - 1 + 450}",
            "escalation detail": f"/escalations/{middle}",
            "tasks (first page)": "/tasks",
            f"tasks ({depth} pages deep)": f"/tasks?after={encode_cursor(cursor)}",
            "tasks status=escalated": "/tasks?status=escalated",
            "tasks type=refund": "/tasks?type=refund",
            "tasks text=0999": "/tasks?text=0999",
            "task detail": f"/tasks/task-{args.tasks // 2:05d}",
            "stop reasons 24h": "/stops?window=24h",
            "stop reasons 7d, type=mail": "/stops?window=7d&type=mail",
            "live (poll)": "/live?task=task-00001&task=task-00002",
            "healthz": "/healthz",
        }
        print(f"{'page':<32} {'p50 ms':>8} {'p95 ms':>8}")
        for name, path in pages.items():
            _get(base + path)  # warm
            times = sorted(_get(base + path) for _ in range(args.requests))
            p50 = times[len(times) // 2] * 1000
            p95 = times[min(len(times) - 1, int(0.95 * len(times)))] * 1000
            print(f"{name:<32} {p50:>8.1f} {p95:>8.1f}")
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
