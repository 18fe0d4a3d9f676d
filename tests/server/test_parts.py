"""The review UI's parts that need no browser: tokens, host names, cursors, the chart, reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from donegate.errors import UserError
from donegate.harness.signing import sign
from donegate.records.report import EscalationReport
from donegate.server._views import certificate_view, signature_state
from donegate.server.auth import is_loopback, loopback_host, parse_tokens
from donegate.server.escalations import report_view
from donegate.server.stops import chart
from donegate.server.tasks import decode_cursor, encode_cursor
from donegate.store import StopRow


def test_tokens_are_named_and_strong() -> None:
    tokens = parse_tokens(["ann:0123456789abcdef,bob:fedcba9876543210", "0123456789ABCDEF"])
    assert [(t.name, t.secret) for t in tokens] == [
        ("ann", "0123456789abcdef"),
        ("bob", "fedcba9876543210"),
        ("operator", "0123456789ABCDEF"),
    ]
    for bad, why in [
        ("ann:short", "shorter than 16"),
        ("a.b:0123456789abcdef", "a name is"),
        ("ann:0123456789abcdef,ann:0123456789abcdeg", "named twice"),
    ]:
        with pytest.raises(UserError, match=why):
            parse_tokens([bad])


@pytest.mark.parametrize(
    ("host", "loop"),
    [("127.0.0.1", True), ("127.9.9.9", True), ("::1", True), ("localhost", True),
     ("0.0.0.0", False), ("10.0.0.5", False), ("::", False), ("example.com", False)],
)  # fmt: skip
def test_which_binds_are_loopback(host: str, loop: bool) -> None:
    assert is_loopback(host) is loop


def test_host_headers_naming_loopback() -> None:
    good = ["127.0.0.1:8700", "localhost:8700", "[::1]:8700", "LOCALHOST", "127.0.0.2"]
    bad = ["evil.example:8700", "127.0.0.1.evil.example", "", "[::2]:80", "10.1.1.1"]
    assert all(loopback_host(h) for h in good)
    assert not any(loopback_host(h) for h in bad)


def test_page_cursors_round_trip_and_garbage_is_none() -> None:
    cursor = (1764582000.123456, "task|with|bars/and slashes")
    assert decode_cursor(encode_cursor(cursor)) == cursor
    assert decode_cursor("!!not-base64") is None
    assert decode_cursor(encode_cursor((1.0, "x"))[:-2] + "@@") is None


def _row(at: float, status: str, ending: str = "complete", loop: str = "complete") -> StopRow:
    return StopRow(task_id="t", task_type="a", status=status, ending=ending, loop_status=loop,
                   open_items=0, turns=2, continuations=0, duration_s=1.0, at=at)  # fmt: skip


def test_the_chart_stacks_runs_by_bucket_and_marks_the_indicators() -> None:
    rows = [_row(5, "done"), _row(5, "done"), _row(15, "failed", "truncated", "truncated"),
            _row(95, "escalated"), _row(200, "done")]  # fmt: skip
    drawn = chart(rows, start=0, end=100, spiking={"truncated"}, buckets=10)
    series = sorted((b.series, b.x) for b in drawn.bars)
    assert [s for s, _ in series] == [
        "done",
        "escalated",
        "failed",
    ]  # the row past `end` is left out
    assert drawn.peak == 2
    done = next(b for b in drawn.bars if b.series == "done")
    failed = next(b for b in drawn.bars if b.series == "failed")
    assert done.height == 2 * failed.height and "2 done" in done.title
    ((x, _, count, hot, _),) = drawn.marks
    assert (count, hot) == (1, True) and x > failed.x


def test_a_short_report_reads_as_empty_parts() -> None:
    short = {"task_id": "t", "reason": "its workers were lost 5 times", "attempts": 5}
    view = report_view(EscalationReport.from_data(short))
    assert view["reason"] == "its workers were lost 5 times" and view["attempts"] == 5
    assert view["failed_checks"] == view["claims"] == view["transcript"] == []
    odd = report_view(
        EscalationReport.from_data(
            {"left": "not a mapping", "why_stuck": [{"verifier": {"reason": "no"}}]}
        )
    )
    assert odd["open_items"] == [] and odd["verifier"] == [{"round": None, "reason": "no"}]


def test_a_certificate_shows_its_signature_state_and_proof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / "home"))
    body: dict[str, Any] = {"kind": "donegate.certificate", "version": 1, "task_id": "t"}
    path = tmp_path / "t.certificate.json"
    path.write_text(json.dumps(body))
    old = certificate_view(str(path))
    assert (old.signature, old.problem) == ("unsigned", None) and old.proof  # cannot be proven
    signed = {**body, "version": 2, "status": "done"}
    signed["signature"] = sign(signed)
    assert signature_state(signed) == ("valid", None)
    forged = {**signed, "task_id": "other"}
    state, why = signature_state(forged)
    assert state == "invalid" and why is not None and "does not match" in why
    path.write_text(json.dumps(forged))
    view = certificate_view(str(path))
    assert view.signature == "invalid" and any("does not match" in p for p in view.proof)
    gone = certificate_view(str(tmp_path / "gone.json"))
    assert (gone.signature, gone.body) == ("invalid", None) and "cannot read" in str(gone.problem)


def test_a_failed_check_with_no_output_shows_no_empty_output_box() -> None:
    """Issue 25: an empty black ``<pre>`` showed under a check that printed nothing."""
    from types import SimpleNamespace

    from donegate.server._web import templates

    failed = [
        {"name": "quiet", "kind": "run", "passed": False, "detail": "exit 1", "output_tail": ""},
        {"name": "loud", "kind": "run", "passed": False, "detail": "exit 1", "output_tail": "boom"},
    ]
    report = report_view(
        EscalationReport.from_data({"task_id": "t", "left": {"failed_checks": failed}})
    )
    entry = SimpleNamespace(id=1, task_id="t", status="open", created_at=0.0)
    page = templates().env.get_template("escalation.html")
    html = page.render(entry=entry, report=report, kind="escalation", task=None, open_count=0)
    assert 'aria-label="Output of quiet"' not in html and "No output." in html
    assert '<pre class="output" aria-label="Output of loud">boom</pre>' in html
