"""``closure: human`` through the queue: a worker leaves the task awaiting review in the human
queue; a person's ``escalations approve`` closes it done, with who and when in the certificate;
``resolve`` rejects it and ``resolve --requeue`` runs it again. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from donegate.store.sql import SqlStore
from donegate.worker.tasks import submit
from tests._cli import run
from tests.review.helpers import reviewer_file
from tests.worker.helpers import task


def reviewed(store: SqlStore, tmp_path: Path, task_id: str) -> None:
    (tmp_path / "ready.txt").write_text("ready")
    spec = task(task_id, tmp_path, closure="human", checks=[{"file_exists": "ready.txt"}])
    submit(spec, store)


def test_a_worker_leaves_it_awaiting_review_and_approval_closes_it_done(
    store: SqlStore, store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reviewed(store, tmp_path, "r1")
    code, _, err = run(capsys, "worker", "--db", store_url, "--until-idle")
    assert code == 0, err
    record = store.get("r1")
    assert record is not None and record.status == "awaiting_review"
    [entry] = store.escalations()
    assert (entry.kind, entry.status, entry.task_id) == ("review", "open", "r1")
    assert entry.report_md.startswith("# Awaiting review: r1")
    assert entry.report.review is not None
    pending = Path(entry.report.review.certificate)
    assert json.loads(pending.read_text())["status"] == "awaiting_review"

    ann = reviewer_file(store, tmp_path)
    code, out, err = run(capsys, "escalations", "approve", str(entry.id), "--by", "ann",
                         "--note", "checked the mail log", "--token-file", str(ann),
                         "--db", store_url)  # fmt: skip
    assert code == 0, err
    assert out.startswith(f"review {entry.id}: approved by ann; task r1 done; ")
    record = store.get("r1")
    assert record is not None and record.status == "done"
    assert record.reason == f"approved by ann in review {entry.id}"
    assert record.result is not None and record.result["approved"]["by"] == "ann"
    cert = json.loads(Path(record.result["certificate"]).read_text())
    assert cert["status"] == "done" and cert["closure"]["review"]["approved_by"] == "ann"
    assert cert["closure"]["review"]["note"] == "checked the mail log"
    approved = store.escalation(entry.id)
    assert approved is not None
    assert (approved.status, approved.resolved_by) == ("approved", "ann")
    assert approved.resolved_at is not None
    assert run(capsys, "verify", record.result["certificate"])[0] == 0

    code, _, err = run(capsys, "escalations", "approve", str(entry.id), "--token-file",
                       str(ann), "--db", store_url)  # fmt: skip
    assert code == 2 and f"review {entry.id} is already approved" in err


def test_a_review_is_rejected_by_resolve_and_rerun_by_requeue(
    store: SqlStore, store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reviewed(store, tmp_path, "r2")
    reviewed(store, tmp_path, "r3")
    assert run(capsys, "worker", "--db", store_url, "--until-idle")[0] == 0
    first, second = store.escalations()
    store.resolve(first.id, note="wrong recipient")
    rejected = store.get(first.task_id)
    assert rejected is not None and rejected.status == "failed"
    assert rejected.reason == f"rejected in review {first.id}: wrong recipient"
    store.resolve(second.id, requeue=True, instructions="send it to bob too")
    again = store.get(second.task_id)
    assert again is not None and (again.status, again.generation) == ("pending", 1)


def test_only_a_review_can_be_approved(
    store: SqlStore, store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    submit(task("stuck", tmp_path, escalate=True), store)
    assert run(capsys, "worker", "--db", store_url, "--until-idle")[0] == 0
    [entry] = store.escalations()
    assert entry.kind == "escalation"
    ann = reviewer_file(store, tmp_path)
    code, _, err = run(capsys, "escalations", "approve", str(entry.id), "--by", "ann",
                       "--token-file", str(ann), "--db", store_url)  # fmt: skip
    assert code == 2 and "is not a review" in err
