"""The JSON API on a real ``donegate serve``: idempotent submits, located 422s, the token rule
on a non-loopback server, the escalation queue, and notifications on a task."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from donegate.cli._store import resolve_model
from donegate.store.sql import SqlStore, open_store
from donegate.worker import Worker
from tests.server.conftest import Served, serve, stop
from tests.worker.effects import LOG_ENV
from tests.worker.helpers import task

SECRET = "api-token-0123456789abcdef"


def call(
    served: Served,
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> tuple[int, Any, str]:
    """One request; (status, parsed JSON, raw text)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    sent = {"Content-Type": "application/json", **(headers or {})}
    request = urllib.request.Request(served.url + path, data=data, headers=sent, method=method)
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            text = response.read().decode()
            return response.status, json.loads(text), text
    except urllib.error.HTTPError as exc:
        text = exc.read().decode()
        return exc.code, json.loads(text), text


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, SqlStore]]:
    monkeypatch.setenv(LOG_ENV, str(tmp_path / "effects.log"))
    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / "home"))
    url = f"sqlite:///{tmp_path / 'api.db'}"
    store = open_store(url)  # migrated: serve reads an existing store only
    yield url, store
    store.close()


@pytest.fixture
def loopback(db: tuple[str, SqlStore]) -> Iterator[Served]:
    server = serve(db[0])
    yield server
    stop(server)


def test_submitting_twice_stores_one_task(
    loopback: Served, db: tuple[str, SqlStore], tmp_path: Path
) -> None:
    spec = task("a1", tmp_path)
    first = call(loopback, "POST", "/api/tasks", spec)
    again = call(loopback, "POST", "/api/tasks", spec)
    assert (first[0], first[1]["created"], first[1]["status"]) == (201, True, "pending")
    assert (again[0], again[1]["created"], again[1]["id"]) == (200, False, "a1")
    assert [t.id for t in db[1].list_tasks()] == ["a1"]
    status, listed, _ = call(loopback, "GET", "/api/tasks?status=pending")
    assert status == 200 and [t["id"] for t in listed["tasks"]] == ["a1"]
    assert call(loopback, "GET", "/api/tasks?status=done")[1] == {"tasks": []}
    status, other, _ = call(loopback, "POST", "/api/tasks", {**spec, "prompt": "another"})
    assert status == 409 and other["field"] == "id"
    status, got, _ = call(loopback, "GET", "/api/tasks/a1")
    assert status == 200 and got["spec"]["prompt"] == spec["prompt"]
    assert (got["certificate"], got["report"], got["notifications"]) == (None, None, [])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"max_steps": 0}, "max_steps"),
        ({"checks": [{"file_contains": {"path": "x"}}]}, "checks[0].file_contains.text"),
        ({"notify": [{"webhook": {"url": "ftp://x"}}]}, "notify[0].webhook.url"),
        ({"id": "no spaces"}, "id"),
        ({"workdir": "relative/dir"}, "workdir"),
    ],
)
def test_a_bad_spec_is_a_422_naming_the_field(
    loopback: Served, tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    status, body, text = call(loopback, "POST", "/api/tasks", {**task("b1", tmp_path), **change})
    assert (status, body["field"]) == (422, field), body
    assert "\n" not in text and body["error"]


def test_writes_need_json_from_this_site(loopback: Served, tmp_path: Path) -> None:
    spec = json.dumps(task("c1", tmp_path)).encode()
    plain = {"Content-Type": "text/plain"}
    status, body, _ = call(loopback, "POST", "/api/tasks", raw=spec, headers=plain)
    assert (status, body["field"]) == (415, "content-type")
    other = {"Origin": "http://evil.example"}
    status, body, _ = call(loopback, "POST", "/api/tasks", raw=spec, headers=other)
    assert (status, body["field"]) == (403, "origin")
    status, body, _ = call(loopback, "POST", "/api/tasks", raw=b"{not json")
    assert status == 400 and body["field"] is None
    assert call(loopback, "GET", "/api/tasks/nope")[:2] == (404, {"error": "no task 'nope'",
                                                                   "field": "id"})  # fmt: skip
    status, doc, _ = call(loopback, "GET", "/api/openapi.json")
    assert status == 200 and doc["openapi"].startswith("3.")
    assert {"/api/tasks", "/api/tasks/{id}", "/api/escalations"} <= set(doc["paths"])


def test_a_non_loopback_server_refuses_requests_without_the_token(
    db: tuple[str, SqlStore], tmp_path: Path
) -> None:
    server = serve(db[0], "--host", "0.0.0.0", "--token", f"disp:{SECRET}")
    try:
        spec = task("d1", tmp_path)
        status, body, _ = call(server, "POST", "/api/tasks", spec)
        assert (status, body["field"]) == (401, "authorization")
        assert call(server, "GET", "/api/tasks")[0] == 401
        wrong = {"Authorization": "Bearer not-the-token-at-all-0000"}
        assert call(server, "GET", "/api/tasks", headers=wrong)[0] == 401
        bearer = {"Authorization": f"Bearer {SECRET}"}
        assert call(server, "POST", "/api/tasks", spec, headers=bearer)[0] == 201
        status, listed, _ = call(server, "GET", "/api/tasks", headers=bearer)
        assert status == 200 and [t["id"] for t in listed["tasks"]] == ["d1"]
    finally:
        stop(server)
    assert [t.id for t in db[1].list_tasks()] == ["d1"]


def test_escalations_resolve_and_a_task_shows_its_report_and_notifications(
    loopback: Served, db: tuple[str, SqlStore], tmp_path: Path
) -> None:
    hook = [{"webhook": {"url": "http://127.0.0.1:9/never"}}]  # discard port: nothing listens
    spec = task("e1", tmp_path, escalate=True, notify=hook)
    assert call(loopback, "POST", "/api/tasks", spec)[0] == 201
    Worker(db[1], model_resolver=resolve_model, deliver_outbox=False).run(until_idle=True)
    status, got, _ = call(loopback, "GET", "/api/tasks/e1")
    assert got["status"] == "escalated" and got["report"]["task_id"] == "e1"
    [n] = got["notifications"]
    assert (n["state"], n["key"], n["kind"]) == ("pending", "e1:final", "webhook")
    with urllib.request.urlopen(f"{loopback.url}/tasks/e1", timeout=20) as page:
        html = page.read().decode()
    assert "Notifications" in html and "e1:final" in html and "127.0.0.1:9/never" in html
    status, queue, _ = call(loopback, "GET", "/api/escalations")
    [entry] = queue["escalations"]
    assert entry["task_id"] == "e1" and entry["status"] == "open"
    path = f"/api/escalations/{entry['id']}/resolve"
    status, resolved, _ = call(loopback, "POST", path, {"note": "handled by hand"})
    assert status == 200 and (resolved["status"], resolved["note"]) == (
        "resolved",
        "handled by hand",
    )
    assert call(loopback, "GET", "/api/escalations")[1] == {"escalations": []}
    assert call(loopback, "POST", path, {"note": "again"})[0] == 409
    assert call(loopback, "POST", path, {"requeue": "yes"})[1]["field"] == "requeue"
