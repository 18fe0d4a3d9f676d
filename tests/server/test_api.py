"""The JSON API on a real ``donegate serve``: idempotent submits, located 422s, the token rule
on a non-loopback server, the escalation queue, and notifications on a task."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from donegate.cli._store import resolve_model
from donegate.review import add_reviewer
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
    sent = {"Content-Type": "application/json", "Authorization": f"Bearer {SECRET}"}
    sent.update(headers or {})
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
    server = serve(db[0], "--token", f"disp:{SECRET}")
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
        anon = {"Authorization": ""}
        status, body, _ = call(server, "POST", "/api/tasks", spec, headers=anon)
        assert (status, body["field"]) == (401, "authorization")
        assert call(server, "GET", "/api/tasks", headers=anon)[0] == 401
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
    bearer = {"Authorization": f"Bearer {SECRET}"}
    request = urllib.request.Request(f"{loopback.url}/tasks/e1", headers=bearer)
    with urllib.request.urlopen(request, timeout=20) as page:
        html = page.read().decode()
    assert "Notifications" in html and "e1:final" in html and "127.0.0.1:9/never" in html
    status, queue, _ = call(loopback, "GET", "/api/escalations")
    [entry] = queue["escalations"]
    assert entry["task_id"] == "e1" and entry["status"] == "open"
    path = f"/api/escalations/{entry['id']}/resolve"
    assert call(loopback, "POST", path, {"note": "x"})[0] == 403  # disp is no reviewer
    ann = {"Authorization": f"Bearer {add_reviewer(db[1], 'ann')}"}
    status, resolved, _ = call(loopback, "POST", path, {"note": "handled by hand"}, headers=ann)
    assert status == 200 and (resolved["status"], resolved["note"]) == (
        "resolved",
        "handled by hand",
    )
    assert call(loopback, "GET", "/api/escalations")[1] == {"escalations": []}
    assert call(loopback, "POST", path, {"note": "again"}, headers=ann)[0] == 409
    assert call(loopback, "POST", path, {"requeue": "yes"}, headers=ann)[1]["field"] == "requeue"


def test_a_task_page_shows_its_spend_by_model_and_role(
    loopback: Served, db: tuple[str, SqlStore], tmp_path: Path
) -> None:
    from dataclasses import replace

    from donegate.messages import Usage
    from tests.worker.helpers import StepModel, tool_turn

    spec = task("b1", tmp_path, budget={"tokens": 1200})
    assert call(loopback, "POST", "/api/tasks", spec)[0] == 201
    turn = replace(
        tool_turn("send", {"to": "ann"}), usage=Usage(input_tokens=1000, output_tokens=10)
    )
    model = StepModel([turn]).model  # 1010 of 1200 tokens: the next call cannot fit
    Worker(db[1], model_resolver=lambda name, what: model, deliver_outbox=False).run(
        until_idle=True
    )
    bearer = {"Authorization": f"Bearer {SECRET}"}  # a server with a token: reads carry it too
    request = urllib.request.Request(f"{loopback.url}/tasks/b1", headers=bearer)
    with urllib.request.urlopen(request, timeout=20) as page:
        html = page.read().decode()
    assert "budget exhausted" in html
    assert "<dt>Spend</dt>" in html and "1010 tokens · 1 model calls (budget tokens 1200)" in html
    assert "agent <code>function:steps</code>: 1 calls, 1000 in / 10 out tokens" in html


def test_a_requeue_through_the_api_or_the_page_may_grant_more_budget(
    loopback: Served, db: tuple[str, SqlStore], tmp_path: Path
) -> None:
    """``budget_extra`` in the API's resolve body and the requeue form's "More budget" field,
    read as ``escalations resolve --requeue --budget-extra`` reads it."""
    from dataclasses import replace

    from donegate.messages import Usage
    from tests.worker.helpers import StepModel, tool_turn

    turn = replace(
        tool_turn("send", {"to": "ann"}), usage=Usage(input_tokens=1000, output_tokens=10)
    )
    for task_id in ("x1", "x2"):
        spec = task(task_id, tmp_path, budget={"tokens": 1200})
        assert call(loopback, "POST", "/api/tasks", spec)[0] == 201
        model = StepModel([turn]).model  # 1010 of 1200 tokens: the next call cannot fit
        Worker(db[1], model_resolver=lambda name, what, m=model: m, deliver_outbox=False).run(
            until_idle=True
        )
    entries = {e.task_id: e.id for e in db[1].escalations(status="open")}
    assert set(entries) == {"x1", "x2"}
    secret = add_reviewer(db[1], "ann")
    ann = {"Authorization": f"Bearer {secret}"}
    path = f"/api/escalations/{entries['x1']}/resolve"
    for bad in ({"dollars": 1}, {"tokens": -5}, {"tokens": True}, [], {}):
        status, got, _ = call(loopback, "POST", path, {"requeue": True, "budget_extra": bad},
                              headers=ann)  # fmt: skip
        assert (status, got["field"]) == (422, "budget_extra"), got
    status, got, _ = call(loopback, "POST", path, {"budget_extra": {"tokens": 10}}, headers=ann)
    assert (status, got["field"]) == (422, "budget_extra")  # only with requeue
    status, got, _ = call(loopback, "POST", path, {"requeue": True, "budget_extra": {"usd": 1}},
                          headers=ann)  # fmt: skip
    assert status == 409 and "the task's budget has no usd limit" in got["error"], got
    body = {"requeue": True, "budget_extra": {"tokens": 3000}}
    assert call(loopback, "POST", path, body, headers=ann)[0] == 200
    x1 = db[1].get("x1")
    assert x1 is not None and (x1.status, x1.spec["budget"]) == ("pending", {"tokens": 4200})

    page = f"{loopback.url}/escalations/{entries['x2']}"
    with urllib.request.urlopen(urllib.request.Request(page, headers=ann), timeout=20) as got_page:
        cookie = got_page.headers["Set-Cookie"].split(";", 1)[0]  # the form's CSRF pair
        html = got_page.read().decode()
    assert 'name="budget_extra"' in html
    csrf = html.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    fields = {"csrf": csrf, "budget_extra": "tokens=500, tokens=500"}
    form = urllib.parse.urlencode(fields).encode()
    request = urllib.request.Request(page + "/requeue", data=form, headers=ann, method="POST")
    request.add_header("Content-Type", "application/x-www-form-urlencoded")
    request.add_header("Cookie", cookie)
    with urllib.request.urlopen(request, timeout=20) as answer:
        assert answer.status == 200  # redirected to the task's page
    x2 = db[1].get("x2")
    assert x2 is not None and (x2.status, x2.spec["budget"]) == ("pending", {"tokens": 2200})


def test_a_tokenless_serve_is_read_only_and_a_token_makes_it_writable(
    db: tuple[str, SqlStore], tmp_path: Path
) -> None:
    server = serve(db[0])
    try:
        assert server.process.stderr is not None  # its first line says what it is
        assert server.process.stderr.readline().startswith("donegate serve: read-only")
        spec = task("r1", tmp_path)
        anon = {"Authorization": ""}
        writes = [
            ("POST", "/api/tasks", spec),
            ("POST", "/api/escalations/1/resolve", {"note": "x"}),
            ("POST", "/api/escalations/1/approve", {}),
            ("POST", "/api/tasks/r1/cancel", {}),
            ("PUT", "/api/tasks/r1", spec),
            ("DELETE", "/api/tasks/r1", None),
        ]
        for method, path, body in writes:
            status, got, _ = call(server, method, path, body, headers=anon)
            assert status == 403 and got["error"].startswith("this server is read-only"), path
        form = urllib.request.Request(
            f"{server.url}/escalations/1/resolve", data=b"note=x", method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )  # fmt: skip
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(form, timeout=20)
        assert refused.value.code == 403
        assert [t.id for t in db[1].list_tasks()] == []
        assert call(server, "GET", "/api/tasks", headers=anon)[0] == 200  # reads still work
    finally:
        stop(server)
    with_token = serve(db[0], "--token", f"disp:{SECRET}")
    try:
        assert call(with_token, "POST", "/api/tasks", spec)[0] == 201
        assert call(with_token, "POST", "/api/tasks", spec, headers=anon)[0] == 401
    finally:
        stop(with_token)
    assert [t.id for t in db[1].list_tasks()] == ["r1"]


def test_token_auto_writes_a_private_token_file_whose_secret_makes_serve_writable(
    db: tuple[str, SqlStore], tmp_path: Path
) -> None:
    server = serve(db[0], "--token", "auto")  # $DONEGATE_HOME is tmp_path/home (the fixture)
    try:
        assert server.process.stderr is not None
        path = tmp_path / "home" / "serve.token"
        first = server.process.stderr.readline()
        assert first.startswith(f"donegate serve: token written to {path} "), first
        assert path.stat().st_mode & 0o777 == 0o600
        name, _, secret = path.read_text().strip().partition(":")
        assert name and len(secret) >= 16
        spec = task("t1", tmp_path)
        bearer = {"Authorization": f"Bearer {secret}"}
        assert call(server, "POST", "/api/tasks", spec, headers=bearer)[0] == 201
        assert call(server, "POST", "/api/tasks", spec, headers={"Authorization": ""})[0] == 401
    finally:
        stop(server)
    assert [t.id for t in db[1].list_tasks()] == ["t1"]


def test_a_refused_start_writes_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--token auto`` writes its file only once the store opened and the address is bound."""
    from donegate.cli import main

    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / "home"))
    for argv in (
        ["serve", "--db", str(tmp_path / "nobody.db"), "--token", "auto"],  # no such store
        ["serve", "--db", str(tmp_path / "s.db"), "--host", "192.0.2.1", "--token", "auto"],
    ):
        if "s.db" in argv[2]:
            open_store(argv[2]).close()
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2, capsys.readouterr().err
        assert not (tmp_path / "home" / "serve.token").exists()
    err = capsys.readouterr().err
    assert "token written" not in err and "cannot listen" in err


def test_port_0_serves_on_the_port_it_prints(db: tuple[str, SqlStore]) -> None:
    import re
    import subprocess
    import sys
    import time

    process = subprocess.Popen(
        [sys.executable, "-m", "donegate", "serve", "--db", db[0], "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = ""
        while "serve on" not in line:
            line = process.stderr.readline()
            assert line, "donegate serve exited before saying where it serves"
        port = int(re.search(r"http://127\.0\.0\.1:(\d+) ", line).group(1))  # type: ignore[union-attr]
        assert port != 0
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, "no answer on the printed port"
                time.sleep(0.2)
    finally:
        process.terminate()
        process.communicate(timeout=20)
