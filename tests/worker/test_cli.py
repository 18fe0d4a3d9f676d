"""The queue commands: submit, worker, tasks, escalations, stats; output and exit codes."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from donegate.store import RunOutcome
from donegate.store.sql import open_store
from tests._cli import run
from tests.review.helpers import reviewer_file_at
from tests.worker.helpers import task


@pytest.fixture
def db(tmp_path: Path, effect_log: Path) -> Iterator[str]:
    """A SQLite store path; signal handlers the worker command installs are put back after."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield str(tmp_path / "queue.db")
    for s, handler in saved.items():
        signal.signal(s, handler)


def write_task(tmp_path: Path, task_id: str, **extra: Any) -> str:
    path = tmp_path / f"{task_id}.yaml"
    path.write_text(yaml.safe_dump(task(task_id, tmp_path, **extra)))
    return str(path)


def test_submit_work_and_inspect(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str
) -> None:
    file = write_task(tmp_path, "t1")
    assert run(capsys, "submit", file, "--db", db) == (0, "t1: submitted (pending)\n", "")
    assert run(capsys, "submit", file, "--db", db)[1] == "t1: already submitted (pending)\n"
    code, out, _ = run(capsys, "submit", file, "--id", "t2", "--db", db, "--json")
    assert (code, json.loads(out)) == (0, {"id": "t2", "status": "pending", "created": True})
    code, _, err = run(capsys, "worker", "--db", db, "--until-idle", "--concurrency", "2")
    assert code == 0 and "2 claimed; 2 done" in err
    code, out, _ = run(capsys, "tasks", "list", "--db", db, "--json")
    assert sorted((t["id"], t["status"]) for t in json.loads(out)) == [
        ("t1", "done"), ("t2", "done"),
    ]  # fmt: skip
    code, out, _ = run(capsys, "tasks", "show", "t2", "--db", db, "--json", "--transcript")
    shown = json.loads(out)
    assert shown["effects"][0]["key"] == "t2:1:0" and shown["runs"][0]["status"] == "done"
    assert [m["role"] for m in shown["transcript"]] == [
        "system", "user", "assistant", "tool", "assistant",
    ]  # fmt: skip
    code, out, _ = run(capsys, "tasks", "show", "t2", "--db", db, "--transcript")
    assert code == 0 and "t2 done" in out and "effect t2:1:0: done x1" in out
    assert out.splitlines()[0] == "t2 done  type mail"  # never "type=None"
    [certificate] = [line for line in out.splitlines() if line.startswith("certificate: ")]
    assert certificate == f"certificate: {shown['task']['result']['certificate']}"
    write_task(tmp_path, "untyped")
    untyped = yaml.safe_load((tmp_path / "untyped.yaml").read_text())
    del untyped["type"]
    (tmp_path / "untyped.yaml").write_text(yaml.safe_dump(untyped))
    run(capsys, "submit", str(tmp_path / "untyped.yaml"), "--db", db)
    code, out, _ = run(capsys, "tasks", "show", "untyped", "--db", db)
    assert out.splitlines()[0] == "untyped pending"
    code, _, err = run(capsys, "tasks", "retry", "t1", "--db", db)
    assert code == 2 and err.startswith("donegate: task 't1' is done;") and err.count("\n") == 1


def test_cancel_and_retry(capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str) -> None:
    run(capsys, "submit", write_task(tmp_path, "t"), "--db", db)
    assert run(capsys, "tasks", "cancel", "t", "--db", db) == (0, "t: cancelled\n", "")
    code, out, _ = run(capsys, "tasks", "retry", "t", "--db", db, "--instructions", "go on")
    assert (code, out) == (0, "t: pending (generation 1)\n")
    code, out, _ = run(capsys, "tasks", "list", "--db", db, "--status", "pending")
    assert code == 0 and "t " in out


def test_the_human_queue(capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str) -> None:
    run(capsys, "submit", write_task(tmp_path, "stuck", escalate=True), "--db", db)
    run(capsys, "worker", "--db", db, "--until-idle")
    code, out, _ = run(capsys, "escalations", "list", "--db", db, "--json")
    [entry] = json.loads(out)
    assert entry["task_id"] == "stuck" and entry["status"] == "open"
    code, out, _ = run(capsys, "escalations", "show", str(entry["id"]), "--db", db)
    assert code == 0 and "# Escalated: stuck" in out and "never-there.txt" in out
    ann = str(reviewer_file_at(db, tmp_path))
    code, out, _ = run(
        capsys, "escalations", "resolve", str(entry["id"]), "--db", db,
        "--requeue", "--instructions", "create the file first", "--token-file", ann,
    )  # fmt: skip
    assert (code, out) == (0, f"escalation {entry['id']}: requeued; task stuck\n")
    code, _, err = run(capsys, "escalations", "resolve", str(entry["id"]), "--db", db,
                       "--token-file", ann)  # fmt: skip
    assert code == 2 and err == f"donegate: escalation {entry['id']} is already requeued\n"
    code, _, err = run(capsys, "escalations", "show", "99", "--db", db)
    assert (code, err) == (2, "donegate: no escalation 99\n")


def test_stats_flags_spikes(capsys: pytest.CaptureFixture[str], db: str) -> None:
    store = open_store(db)
    for i in range(6):
        spec = {"id": f"t{i}", "prompt": "p", "type": "migration"}
        store.submit(f"t{i}", spec, type="migration")
        lease = store.claim("w", 30)
        assert lease is not None
        hit = i < 3
        store.finish(
            lease,
            RunOutcome(
                status="failed" if hit else "done",
                ending="tool_use" if hit else "complete",
                loop_status="max_steps" if hit else "complete",
                model_calls=50 if hit else 4,
            ),
        )
    store.close()
    code, out, _ = run(capsys, "stats", "--db", db, "--since", "1h")
    assert code == 1
    assert "migration  failed  max_steps  3" in " ".join(out.split("\n"))
    assert "SPIKE runs that hit the step limit: 3 (50%; no baseline)" in out
    code, out, _ = run(capsys, "stats", "--db", db, "--json")
    data = json.loads(out)
    assert code == 1 and data["total"] == 6 and data["tasks"] == {"done": 3, "failed": 3}
    code, _, err = run(capsys, "stats", "--db", db, "--since", "soon")
    assert code == 2 and "'--since': 'soon'" in err


def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DONEGATE_BROKER", raising=False)
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\nprompt: p\nmax_steps: 0\n")
    code, _, err = run(capsys, "submit", str(bad), "--db", db)
    assert (
        code == 2
        and err == f"donegate: {bad}: max_steps: input should be greater than or equal to 1\n"
    )
    url = "postgresql+psycopg://ann:secret@127.0.0.1:1/tasks"
    code, _, err = run(capsys, "tasks", "list", "--db", url)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(
        "donegate: cannot reach the store postgresql+psycopg://ann:***@127.0.0.1:1/tasks"
    )
    code, _, err = run(capsys, "worker", "--engine", "celery", "--db", db)
    assert (code, err) == (
        2, "donegate: --engine celery needs --broker redis://HOST:PORT/DB (or DONEGATE_BROKER)\n",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--lease", "nan"),
        ("--lease", "inf"),
        ("--lease", "0"),
        ("--lease", "-5"),
        ("--poll", "-1"),
        ("--poll", "NaN"),
        ("--poll", "0"),
        ("--max-tasks", "0"),
        ("--max-tasks", "-3"),
        ("--max-tasks", "1.5"),
        ("--concurrency", "0"),
        ("--concurrency", "nan"),
        ("--concurrency", "100000"),
        ("--store-patience", "-1"),
        ("--store-patience", "inf"),
        ("--metrics-port", "70000"),
        ("--metrics-port", "-1"),
        ("--visibility-timeout", "nan"),
    ],
)
def test_worker_numbers_that_mean_nothing_are_one_line_and_touch_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str, option: str, value: str
) -> None:
    assert run(capsys, "submit", write_task(tmp_path, "t1"), "--db", db)[0] == 0
    code, out, err = run(capsys, "worker", "--db", db, "--until-idle", option, value)
    assert (code, out) == (2, "")
    assert err.startswith(f"donegate: {option} {value!r}: must be ") and err.count("\n") == 1
    assert "Traceback" not in err
    store = open_store(db)
    record = store.get("t1")
    assert record is not None and (record.status, record.attempts) == ("pending", 0)
    store.close()


@pytest.mark.parametrize("value", ["0", "-1"])
def test_submit_refuses_a_max_attempts_that_allows_no_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str, value: str
) -> None:
    code, _, err = run(
        capsys, "submit", write_task(tmp_path, "t1"), "--db", db, "--max-attempts", value
    )
    assert code == 2 and "--max-attempts" in err and err.count("\n") == 1, err
    store = open_store(db)
    assert store.list_tasks() == []
    store.close()


def test_a_worker_that_stops_on_a_fault_exits_1_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    assert run(capsys, "submit", write_task(tmp_path, "t1"), "--db", db)[0] == 0

    def no_space(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device", "/full/certificates/t1.json")

    monkeypatch.setattr("donegate.harness.runner.write_certificate", no_space)
    code, _, err = run(capsys, "worker", "--db", db, "--until-idle")
    assert code == 1
    start, last = err.splitlines()
    assert start.startswith("worker ")
    assert last.startswith("donegate: worker ") and last.endswith(
        " stopped: disk full: /full/certificates/t1.json: No space left on device; "
        "1 claimed (none finished); 1 put back"
    )
    store = open_store(db)
    record = store.get("t1")
    assert record is not None and (record.status, record.attempts) == ("pending", 0)
    store.close()
