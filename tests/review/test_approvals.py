"""Approvals only reviewers give: a process of the same user without a reviewer's secret cannot
approve, resolve or requeue through the CLI, the API or the UI, and nothing changes when it
tries; a reviewer with one can, and the approved certificate names the reviewer, the channel, the
OS user and the time. The review UI and API are the real Starlette app, driven in-process."""

from __future__ import annotations

import getpass
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from donegate.cli._store import resolve_model
from donegate.harness.certificate import verify_certificate
from donegate.review import add_reviewer
from donegate.server import create_app
from donegate.store.sql import SqlStore, open_store
from donegate.worker import Worker, submit
from tests._cli import run
from tests.worker.effects import LOG_ENV
from tests.worker.helpers import task

AD_HOC = "dispatcher-token-0123456789"
"""An ad-hoc ``serve --token``: it may submit, never review."""


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SqlStore]:
    monkeypatch.setenv(LOG_ENV, str(tmp_path / "effects.log"))
    s = open_store(f"sqlite:///{tmp_path / 'q.db'}")
    yield s
    s.close()


def queued(store: SqlStore, tmp_path: Path) -> dict[str, int]:
    """A review (``closure: human``, awaiting approval) and an escalation; their ids."""
    (tmp_path / "ready.txt").write_text("ready")
    submit(task("rev", tmp_path, closure="human", checks=[{"file_exists": "ready.txt"}]), store)
    submit(task("esc", tmp_path, escalate=True), store)
    Worker(store, model_resolver=resolve_model, deliver_outbox=False).run(until_idle=True)
    return {e.task_id: e.id for e in store.escalations()}


def state(store: SqlStore, folder: Path) -> tuple[Any, ...]:
    """What an action would change: the queue, the tasks, the actions, the certificates."""
    queue = tuple((e.id, e.status, e.resolved_by) for e in store.escalations(status=None))
    tasks = tuple((t.id, t.status, t.generation) for t in store.list_tasks())
    acts = tuple(a.id for t in ("rev", "esc") for a in store.actions(task_id=t))
    return queue, tasks, acts, sorted(p.name for p in folder.rglob("*.json"))


def approved_review(store: SqlStore, task_id: str) -> dict[str, Any]:
    record = store.get(task_id)
    assert record is not None and record.status == "done" and record.result is not None
    path = record.result["certificate"]
    assert verify_certificate(path) == (True, [])
    review: dict[str, Any] = json.loads(Path(path).read_text())["closure"]["review"]
    return review


def test_the_cli_needs_a_reviewers_secret(
    store: SqlStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = queued(store, tmp_path)
    db = store.url
    impostor = tmp_path / "impostor.token"
    impostor.write_text("dgr.ann.not-the-secret-at-all-0123456789abcdef\n")
    before = state(store, tmp_path)
    attempts = [
        ("escalations", "approve", str(ids["rev"]), "--by", "ann"),
        ("escalations", "approve", str(ids["rev"]), "--by", "ann", "--token-file", str(impostor)),
        ("escalations", "resolve", str(ids["esc"]), "--note", "done by hand"),
        ("escalations", "resolve", str(ids["rev"]), "--note", "rejected"),
        ("escalations", "resolve", str(ids["esc"]), "--requeue", "--instructions", "again"),
    ]
    for args in attempts:
        code, out, err = run(capsys, *args, "--db", db)
        assert (code, out) == (2, ""), args
        assert err.count("\n") == 1 and ("reviewer" in err), err
    add_reviewer(store, "ann")  # a reviewer exists now, but the impostor still lacks the secret
    for args in attempts:
        assert run(capsys, *args, "--db", db)[0] == 2, args
    assert state(store, tmp_path) == before

    bob = tmp_path / "bob.token"
    bob.write_text(add_reviewer(store, "bob"))
    code, _, err = run(capsys, *attempts[0], "--token-file", str(bob), "--db", db)
    assert code == 2 and "--by ann: the secret in --token-file is bob's" in err
    code, out, err = run(capsys, "escalations", "approve", str(ids["rev"]), "--token-file",
                         str(bob), "--note", "read it", "--db", db)  # fmt: skip
    assert code == 0, err
    assert out.startswith(f"review {ids['rev']}: approved by bob; task rev done; ")
    review = approved_review(store, "rev")
    assert (review["approved_by"], review["channel"], review["note"]) == ("bob", "cli", "read it")
    assert review["os_user"] == getpass.getuser() and review["approved_at"]
    code, _, err = run(capsys, *attempts[2], "--token-file", str(bob), "--db", db)
    assert code == 0, err
    entry = store.escalation(ids["esc"])
    assert entry is not None and (entry.status, entry.resolved_by) == ("resolved", "bob")
    assert [(a.actor, a.action) for a in store.actions(task_id="rev")] == [("bob", "approve")]


def test_the_api_needs_a_reviewers_bearer(store: SqlStore, tmp_path: Path) -> None:
    ids = queued(store, tmp_path)
    base = "http://127.0.0.1"
    approve = f"/api/escalations/{ids['rev']}/approve"
    resolve = f"/api/escalations/{ids['esc']}/resolve"
    before = state(store, tmp_path)
    with TestClient(create_app(store), base_url=base) as tokenless:  # no reviewer, no token
        for path in (approve, resolve):
            got = tokenless.post(path, json={})
            assert got.status_code == 403 and "read-only" in got.json()["error"]
    ann = add_reviewer(store, "ann")
    with TestClient(create_app(store, token=f"disp:{AD_HOC}"), base_url=base) as client:
        assert client.post(approve, json={}).status_code == 401  # no bearer at all
        forged = {"Authorization": "Bearer dgr.ann.forged-forged-forged-forged"}
        assert client.post(approve, json={}, headers=forged).status_code == 401
        ad_hoc = {"Authorization": f"Bearer {AD_HOC}"}
        for path, body in ((approve, {}), (resolve, {}), (resolve, {"requeue": True})):
            got = client.post(path, json=body, headers=ad_hoc)
            assert got.status_code == 403, path
            assert got.json() == {
                "error": "disp is not a reviewer: approving, resolving and requeueing need a "
                "reviewer's secret (donegate reviewers add NAME)",
                "field": "authorization",
            }
        assert state(store, tmp_path) == before
        bearer = {"Authorization": f"Bearer {ann}"}
        got = client.post(approve, json={"note": "looks right"}, headers=bearer)
        assert got.status_code == 200, got.text
        assert got.json()["status"] == "approved" and got.json()["resolved_by"] == "ann"
        got = client.post(resolve, json={"note": "fixed by hand"}, headers=bearer)
        assert got.status_code == 200 and got.json()["resolved_by"] == "ann"
        store.remove_reviewer("ann")
        assert client.get("/api/tasks", headers=bearer).status_code == 401  # removed: at once
    review = approved_review(store, "rev")
    assert (review["approved_by"], review["channel"], review["note"]) == (
        "ann",
        "api",
        "looks right",
    )
    assert review["os_user"] == getpass.getuser()


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, html[:400]
    return found.group(1)


def _login(client: TestClient, secret: str) -> None:
    form = {"csrf": _csrf(client.get("/login").text), "token": secret, "next": "/"}
    got = client.post("/login", data=form, follow_redirects=False)
    assert got.status_code == 303, got.text


def test_the_ui_needs_a_reviewers_login(store: SqlStore, tmp_path: Path) -> None:
    ids = queued(store, tmp_path)
    ann = add_reviewer(store, "ann")
    app = create_app(store, token=f"disp:{AD_HOC}")
    page = f"/escalations/{ids['rev']}"
    before = state(store, tmp_path)
    with TestClient(app, base_url="http://127.0.0.1") as ad_hoc:
        _login(ad_hoc, AD_HOC)  # an ad-hoc token signs in, and reads
        html = ad_hoc.get(page).text
        assert "Only a reviewer approves" in html and "disp is not one" in html
        csrf = _csrf(html)
        for action in ("approve", "resolve", "requeue"):
            got = ad_hoc.post(f"{page}/{action}", data={"csrf": csrf}, follow_redirects=False)
            assert got.status_code == 403 and "disp is not a reviewer" in got.text, action
    assert state(store, tmp_path) == before
    with TestClient(app, base_url="http://127.0.0.1") as client:
        _login(client, ann)
        html = client.get(page).text
        assert "Only a reviewer approves" not in html
        csrf = _csrf(html)
        got = client.post(
            f"{page}/approve", data={"csrf": csrf, "note": "read it"}, follow_redirects=False
        )
        assert got.status_code == 303 and got.headers["location"] == "/tasks/rev", got.text
        store.remove_reviewer("ann")  # the session ends with the reviewer
        assert client.get(page, follow_redirects=False).status_code == 303
    review = approved_review(store, "rev")
    assert (review["approved_by"], review["channel"], review["note"]) == ("ann", "ui", "read it")
    assert review["os_user"] == getpass.getuser()
    assert [(a.actor, a.action) for a in store.actions(task_id="rev")] == [("ann", "approve")]
