"""One mapper per record: the journal's and the review pages' reads of a run and a stop agree."""

from __future__ import annotations

import sqlalchemy as sa

from donegate.records.status import AttemptStatus
from donegate.store.sql import SqlStore


def _event(store: SqlStore, task_id: str, at: float, spend: float) -> None:
    with store._db.write() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO events (task_id, task_type, status, ending, loop_status, turns, "
                "continuations, duration_s, at, spend_usd) VALUES (:t, 'kind', 'escalated', "
                "'complete', 'gated', 3, 1, 2.5, :at, :spend)"
            ),
            {"t": task_id, "at": at, "spend": spend},
        )


def test_both_reads_of_stop_rows_are_the_same_records_spend_included(store: SqlStore) -> None:
    _event(store, "a", 10.0, 0.25)
    _event(store, "b", 11.0, 0.0)
    telemetry, page = store.stop_rows(since=0), store.stop_rows_of(since=0)
    assert telemetry == page
    assert [(r.task_id, r.spend_usd, r.turns, r.loop_status) for r in page] == [
        ("a", 0.25, 3, "gated"),
        ("b", 0.0, 3, "gated"),
    ]
    assert store.stop_rows_of(since=10.5) == page[1:]


def test_a_run_reads_the_same_from_the_journal_and_the_review_pages(store: SqlStore) -> None:
    store.submit("t", {"id": "t", "prompt": "p"}, type=None)
    lease = store.claim("w", 30)
    assert lease is not None
    (journal,) = store.runs("t")
    (page,) = store.journals("t")
    assert page.run == journal
    assert journal.status is AttemptStatus.RUNNING and journal.worker_id == "w"
