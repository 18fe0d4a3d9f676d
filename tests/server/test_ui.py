"""The review UI in real Chromium, against a real ``donegate serve`` over a store filled by real
worker runs: the queue, an escalation's report, Requeue then a worker finishing the task,
Resolve, escaping, CSRF, tokens, the stop-reason page, and the refusal to bind off loopback
without a token.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from donegate.store.sql import open_store
from donegate.worker import submit
from tests.server.conftest import REPO, Filled, free_port, serve, stop
from tests.server.fill import READY_HINT, XSS_CLAIM, report_task, work

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
SERVE = [sys.executable, "-m", "donegate", "serve"]


def escalation_of(filled: Filled, role: str) -> int:
    """The open queue entry of the task playing `role`."""
    task_id = filled.ids[role]
    entries = [e for e in filled.store.escalations(status=None) if e.task_id == task_id]
    assert entries, f"{task_id} was never escalated"
    return entries[-1].id


def shot(page: Page, shots: Path, name: str) -> None:
    path = shots / f"serve-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_queue_is_the_landing_page_and_lists_escalations_oldest_first(
    page: Page, filled: Filled, shots: Path
) -> None:
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/escalations$"))
    expect(page.locator("#queue tbody tr").first).to_be_visible()
    shot(page, shots, "escalations")
    page.goto("/escalations?status=all")
    rows = page.locator("#queue tbody tr")
    tasks = [rows.nth(i).locator("td").nth(1).inner_text() for i in range(rows.count())]
    stuck = [filled.ids[r] for r in ("requeue", "resolve", "xss", "token")]
    assert [t for t in tasks if t in stuck] == stuck  # oldest first
    first = rows.filter(has_text=filled.ids["requeue"])
    expect(first.locator("td").nth(3)).to_contain_text("not done after 1 continuation")
    expect(first.locator("td").nth(4)).to_have_text("1")  # continuations spent
    expect(first.locator("td").nth(5)).to_have_text(re.compile(r"^\d+(s|m)"))  # time waiting
    expect(page.get_by_role("columnheader", name="Why it is stuck")).to_be_visible()


def test_an_escalation_shows_the_failing_checks_output(
    page: Page, filled: Filled, shots: Path
) -> None:
    page.goto("/escalations")
    page.get_by_role("link", name=filled.ids["requeue"]).first.click()
    output = page.get_by_label("Output of report is ready")
    expect(output).to_have_text("report.txt is not ready; it says: PENDING")
    claims = page.locator("section", has=page.get_by_role("heading", name="Claims made"))
    expect(claims.locator("tbody tr")).to_have_count(2)  # the claim, and the one after the nudge
    expect(page.get_by_role("button", name="Resolve")).to_be_visible()
    expect(page.get_by_role("button", name="Requeue")).to_be_visible()
    expect(page.get_by_label("Instructions")).to_be_editable()
    expect(page.get_by_label("Note")).to_be_editable()
    shot(page, shots, "escalation")


def test_requeue_with_instructions_then_a_worker_finishes_the_task(
    page: Page, filled: Filled, shots: Path
) -> None:
    task_id = filled.ids["requeue"]
    page.goto(f"/escalations/{escalation_of(filled, 'requeue')}")
    page.get_by_label("Instructions").fill(READY_HINT)
    page.get_by_role("button", name="Requeue").click()
    expect(page).to_have_url(re.compile(f"/tasks/{task_id}$"))
    expect(page.locator("dl.meta .status").first).to_have_text("pending")
    record = filled.store.get(task_id)
    assert record is not None and record.status == "pending" and record.generation == 1
    assert record.instructions == READY_HINT
    (action,) = filled.store.actions(task_id=task_id)
    assert (action.actor, action.action, action.detail) == ("ann", "requeue", READY_HINT)

    work(filled.store, filled.root / "home")  # a worker takes it; the open page follows it

    expect(page.locator("dl.meta .status").first).to_have_text("done", timeout=30_000)
    expect(page.locator("dd.sig")).to_have_text("signature: valid")
    expect(page.get_by_text("signature, digests, evidence and transcript hold")).to_be_visible()
    runs = page.locator("article.run")
    expect(runs).to_have_count(2)  # the new generation's run is listed first
    expect(runs.first.locator("h3")).to_contain_text("generation 1")
    expect(runs.first.locator("td.gate").last).to_contain_text("accepted")
    expect(runs.first).to_contain_text('"content":"READY"')
    expect(page.get_by_role("heading", name="Reviewer instructions (appended)")).to_be_visible()
    shot(page, shots, "task")


def test_resolve_closes_an_escalation_with_a_note(page: Page, filled: Filled) -> None:
    entry = escalation_of(filled, "resolve")
    page.goto(f"/escalations/{entry}")
    page.get_by_label("Note").fill("fixed the report by hand")
    page.get_by_role("button", name="Resolve").click()
    expect(page).to_have_url(re.compile(f"/escalations/{entry}$"))
    expect(page.locator("dl.meta .status").first).to_have_text("resolved")
    expect(page.get_by_role("button", name="Resolve")).to_have_count(0)
    stored = filled.store.escalation(entry)
    assert stored is not None and (stored.status, stored.note) == (
        "resolved",
        "fixed the report by hand",
    )
    page.goto("/escalations")
    expect(page.locator("#queue")).not_to_contain_text(filled.ids["resolve"])
    (action,) = filled.store.actions(task_id=filled.ids["resolve"])
    assert (action.actor, action.action, action.escalation_id) == ("ann", "resolve", entry)


def test_approve_closes_a_review_as_done_with_a_signed_certificate(
    page: Page, filled: Filled
) -> None:
    task_id = filled.ids["review"]
    record = filled.store.get(task_id)
    assert record is not None and record.status == "awaiting_review"
    page.goto(f"/escalations/{escalation_of(filled, 'review')}")
    expect(page.get_by_text("Resolving it rejects the claim")).to_be_visible()
    csrf = page.locator("input[name=csrf]").first.get_attribute("value") or ""
    page.get_by_label("Approval note").fill("read the report; it is right")
    page.get_by_role("button", name="Approve").click()
    expect(page).to_have_url(re.compile(f"/tasks/{task_id}$"))
    expect(page.locator("dl.meta .status").first).to_have_text("done")
    expect(page.locator("dd.sig")).to_have_text("signature: valid")
    expect(page.get_by_text("approved by ann at")).to_be_visible()  # the certificate says who
    record = filled.store.get(task_id)
    assert record is not None and record.status == "done"
    (action,) = filled.store.actions(task_id=task_id)
    assert (action.actor, action.action) == ("ann", "approve")
    again = page.request.post(
        f"/escalations/{escalation_of(filled, 'review')}/approve",
        form={"csrf": csrf},
        max_redirects=0,
    )
    assert again.status == 409 and "already approved" in again.text()


def test_a_script_in_a_claim_renders_as_text(page: Page, filled: Filled) -> None:
    page.goto(f"/escalations/{escalation_of(filled, 'xss')}")
    claims = page.locator("section", has=page.get_by_role("heading", name="Claims made"))
    expect(claims.locator("td.claim pre")).to_have_text(XSS_CLAIM)
    assert page.evaluate("window.__donegate_pwned") is None
    assert page.title() != "pwned"
    inline = page.evaluate("[...document.scripts].filter(s => !s.src).length")
    assert inline == 0
    html = page.content()
    assert "&lt;script&gt;window.__donegate_pwned" in html
    page.goto(f"/tasks/{filled.ids['xss']}")
    expect(page.locator("article.run pre", has_text="<script>").first).to_be_visible()
    assert page.evaluate("window.__donegate_pwned") is None


def test_a_post_without_the_csrf_token_is_refused(page: Page, filled: Filled) -> None:
    entry = escalation_of(filled, "token")
    page.goto(f"/escalations/{entry}")
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    assert token
    url = f"/escalations/{entry}/resolve"
    missing = page.request.post(url, form={"note": "no token"}, max_redirects=0)
    wrong = page.request.post(url, form={"note": "bad", "csrf": "0" * 64}, max_redirects=0)
    elsewhere = page.request.post(
        url,
        form={"note": "cross-site", "csrf": token},
        headers={"Origin": "http://evil.example"},
        max_redirects=0,
    )
    requeue = page.request.post(
        f"/escalations/{entry}/requeue", form={"instructions": "x"}, max_redirects=0
    )
    retry = page.request.post(f"/tasks/{filled.ids['token']}/requeue", form={}, max_redirects=0)
    approve = page.request.post(f"/escalations/{entry}/approve", form={}, max_redirects=0)
    login = page.request.post("/login", form={"token": "x" * 20}, max_redirects=0)
    refused = [r.status for r in (missing, wrong, elsewhere, requeue, retry, approve, login)]
    assert refused == [403] * 7
    assert "CSRF" in missing.text()
    stored = filled.store.escalation(entry)
    assert stored is not None and stored.status == "open"
    assert filled.store.actions(task_id=filled.ids["token"]) == []


def test_the_stop_reasons_page_flags_the_truncation_spike(
    page: Page, filled: Filled, shots: Path
) -> None:
    page.goto("/stops?window=24h")
    expect(page.get_by_role("alert")).to_contain_text("truncated finals")
    spike = page.locator("#signals tr.spike")
    expect(spike).to_have_count(1)
    expect(spike).to_contain_text("SPIKE")
    breakdown = page.locator("#breakdown tbody")
    expect(breakdown.locator("tr", has_text="truncated")).to_contain_text("failed")
    expect(breakdown.locator("tr", has_text="inject")).to_contain_text("escalated")
    assert page.locator("svg rect.bar").count() >= 3  # done, escalated, failed stacked
    expect(page.locator("svg g.mark.hot")).to_have_count(1)
    shot(page, shots, "stops")
    page.get_by_label("Task type").select_option("inject")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"type=inject"))
    expect(breakdown.locator("tr")).to_have_count(1)
    expect(page.get_by_role("alert")).to_have_count(0)


def test_the_tasks_list_filters_by_status_type_and_text(
    page: Page, filled: Filled, shots: Path
) -> None:
    page.goto("/tasks")
    page.get_by_label("Status").select_option("failed")
    page.get_by_role("button", name="Filter").click()
    ids = page.locator("#tasks tbody tr td:first-child").all_inner_texts()
    assert sorted(ids) == [f"report-cut-{n}" for n in range(3)]
    page.goto("/tasks?text=XSS")
    assert page.locator("#tasks tbody tr td:first-child").all_inner_texts() == [filled.ids["xss"]]
    page.goto("/tasks?type=inject&status=done")
    expect(page.locator("#tasks tbody")).to_have_text("No task matches.")
    page.goto("/tasks")
    shot(page, shots, "tasks")


def test_health_and_host_checks(tmp_path: Path) -> None:
    bare = f"sqlite:///{tmp_path / 'bare.db'}"  # no reviewer, no token: read-only, loopback
    open_store(bare).close()
    served = serve(bare)  # tokenless: read-only, and only for loopback host names
    try:
        with urllib.request.urlopen(f"{served.url}/healthz", timeout=10) as response:
            assert json.loads(response.read())["status"] == "ok"
        rebound = urllib.request.Request(f"{served.url}/tasks", headers={"Host": "evil.example"})
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(rebound, timeout=10)
        assert info.value.code == 421  # a loopback server answers only to loopback names
    finally:
        stop(served)


def test_a_non_loopback_bind_without_a_token_is_refused(filled: Filled, tmp_path: Path) -> None:
    port = str(free_port())
    bare = f"sqlite:///{tmp_path / 'bare.db'}"  # no reviewer: nobody to ask who they are
    open_store(bare).close()
    env = {k: v for k, v in os.environ.items() if k != "DONEGATE_SERVE_TOKEN"}
    done = subprocess.run(
        [*SERVE, "--db", bare, "--host", "0.0.0.0", "--port", port],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=env,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("donegate: --host 0.0.0.0 is not a loopback address")
    assert done.stderr.count("\n") == 1 and done.stdout == ""
    weak = subprocess.run(
        [*SERVE, "--db", filled.db, "--host", "0.0.0.0", "--port", port, "--token", "ann:short"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=env,
    )
    assert (weak.returncode, weak.stderr.count("\n")) == (2, 1)
    assert "shorter than 16 characters" in weak.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = subprocess.run(
            [*SERVE, "--db", filled.db, "--port", str(taken.getsockname()[1])],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
            env=env,
        )
    assert (busy.returncode, busy.stderr.count("\n")) == (2, 1)
    assert "cannot listen" in busy.stderr


def test_with_a_token_every_request_carries_it_and_actions_say_who(
    page: Page, filled: Filled, tmp_path: Path
) -> None:
    page.context.set_extra_http_headers({})  # this server has its own token: log in below
    submit(report_task("report-ann", tmp_path / "w-ann"), filled.store)
    work(filled.store, filled.root / "home")
    secret = filled.secret  # the reviewer's: an ad-hoc token reads, but cannot resolve
    ad_hoc = "s3cret-token-for-disp"
    server = serve(filled.db, "--host", "0.0.0.0", env={"DONEGATE_SERVE_TOKEN": f"disp:{ad_hoc}"})
    try:
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(
                urllib.request.Request(f"{server.url}/live", headers={"Accept": "*/*"}), timeout=10
            )
        assert info.value.code == 401
        bearer = urllib.request.Request(
            f"{server.url}/tasks", headers={"Authorization": f"Bearer {ad_hoc}"}
        )
        with urllib.request.urlopen(bearer, timeout=10) as response:
            assert response.status == 200
        entry = max(e.id for e in filled.store.escalations() if e.task_id == "report-ann")
        page.goto(f"{server.url}/escalations/{entry}")
        expect(page).to_have_url(re.compile(r"/login\?next="))
        page.get_by_label("Token").fill("not-the-token-at-all")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_have_text("That token is not valid.")
        page.get_by_label("Token").fill(secret)
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(f"{server.url}/escalations/{entry}")
        expect(page.get_by_text("signed in as")).to_contain_text("ann")
        page.get_by_label("Note").fill("looked at it")
        page.get_by_role("button", name="Resolve").click()
        expect(page.locator("dl.meta .status").first).to_have_text("resolved")
        (action,) = filled.store.actions(task_id="report-ann")
        assert (action.actor, action.action, action.detail) == ("ann", "resolve", "looked at it")
    finally:
        stop(server)
