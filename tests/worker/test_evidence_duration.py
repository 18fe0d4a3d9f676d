"""The store's evidence rows carry the duration measured where the tool ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from donegate.cli._store import resolve_model
from donegate.store.sql import SqlStore
from donegate.worker import Worker, submit
from tests.worker.effects import DELAY_ENV
from tests.worker.helpers import task

NAP = 0.2


def test_an_evidence_row_stores_the_tools_real_duration(
    store: SqlStore, effect_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DELAY_ENV, str(NAP))  # `send` sleeps this long while it runs
    submit(task("t", effect_log.parent), store)
    outcome = Worker(store, model_resolver=resolve_model).run_one()
    assert outcome is not None and outcome.status == "done"
    [evidence] = store.evidence("t")
    assert evidence.executed and evidence.call.name == "send"
    assert abs(evidence.duration_s - NAP) < 0.05, evidence.duration_s
