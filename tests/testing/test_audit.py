"""``donegate audit``: real programs (official SDKs over HTTP) against the scenario pack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from donegate.testing.audit import ANSWER, SCENARIOS, ToolShape, audit, pick_scenarios
from tests._cli import donegate

PROGRAMS = Path(__file__).parent / "audit_programs"
NAIVE = [sys.executable, str(PROGRAMS / "naive_loop.py")]


def verdicts(command: list[str], names: list[str] | None = None) -> dict[str, str]:
    report = audit(command, scenarios=pick_scenarios(names), timeout=30)
    return {r.name: r.verdict for r in report.scenarios}


@pytest.mark.slow
def test_naive_loop_claims_done_on_broken_endings() -> None:
    got = verdicts([*NAIVE, "naive"])
    for name in ("truncated_text", "filtered", "refused", "empty"):
        assert got[name] == "false_done", (name, got)
    assert got["progress_report"] == "premature_stop", got
    assert got["finished"] == "ok", got  # the naive loop does handle the happy path
    assert got["paused_chain"] == "skipped", got  # openai-chat cannot express pause_turn


@pytest.mark.slow
def test_loop_calling_once_too_often_is_extra_call() -> None:
    got = verdicts([*NAIVE, "extra"], ["finished", "extra_call"])
    assert got == {"finished": "extra_call", "extra_call": "extra_call"}


@pytest.mark.slow
def test_loop_running_a_cut_call_is_ran_cut_call() -> None:
    got = verdicts([*NAIVE, "cut"], ["truncated_call", "finished"])
    assert got == {"truncated_call": "ran_cut_call", "finished": "ok"}


def test_scenario_pack_names() -> None:
    assert [s.name for s in SCENARIOS] == [
        "finished", "truncated_text", "truncated_call", "refused", "filtered", "empty",
        "whitespace", "thinking_only", "paused_chain", "progress_report", "malformed_call",
        "rate_limited", "server_error_then_ok", "overloaded", "disconnect", "extra_call",
    ]  # fmt: skip


def test_a_finish_tool_pack_answers_through_the_tool_and_keeps_every_other_turn() -> None:
    text, finish = ToolShape(), ToolShape(finish="task_complete")
    for scenario in SCENARIOS:
        plain, called = scenario.turns(text), scenario.turns(finish)
        scenario.script(finish)  # every turn still parses
        if scenario.answer is None:
            assert called == plain, scenario.name
            continue
        assert plain[-1] == {"text": ANSWER}, scenario.name
        assert called[:-1] == plain[:-1], scenario.name
        assert called[-1] == {"tool_call": "task_complete", "args": {"summary": ANSWER},
                              "id": "finish1"}  # fmt: skip


@pytest.mark.slow
def test_cli_finish_tool_compares_agents_that_end_through_a_tool() -> None:
    args = ["--json", "--scenarios", "finished,progress_report,empty"]
    proc = _cli(*args, "--finish-tool", "task_complete", "--", *NAIVE, "finish")
    data = json.loads(proc.stdout)
    got = {s["name"]: s["verdict"] for s in data["scenarios"]}
    assert got == {"finished": "ok", "progress_report": "premature_stop", "empty": "false_done"}
    assert data["summary"]["finish_tool"] == "task_complete"
    assert proc.returncode == 1
    # The same agent on the text pack: its answer is text, which it also takes as final.
    text = json.loads(_cli("--json", "--scenarios", "finished", "--", *NAIVE, "finish").stdout)
    assert text["summary"]["finish_tool"] is None and text["scenarios"][0]["verdict"] == "ok"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "donegate", "audit", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_cli_json_report_and_exit_codes(tmp_path: Path) -> None:
    report = tmp_path / "card.html"
    proc = _cli("--json", "--scenarios", "finished,refused", "--report", str(report),
                "--", *NAIVE, "naive")  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    rows = {s["name"]: s for s in data["scenarios"]}
    assert rows["refused"]["verdict"] == "false_done"
    assert rows["finished"]["answer"] == "AUDIT-ANSWER: audit_work.txt is written."
    assert rows["finished"]["api"] == "openai-chat" and rows["finished"]["requests"] == 2
    assert data["summary"]["ok"] is False
    page = report.read_text()
    assert page.startswith("<!doctype html>") and "false_done" in page
    ok = _cli("--scenarios", "finished", "--report", str(tmp_path / "c.md"), "--", *NAIVE, "naive")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "| finished | openai-chat | ok |" in (tmp_path / "c.md").read_text()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--scenarios", "nope", "--", "true"], "unknown scenario 'nope'"),
        (["--report", "x.txt", "--", "true"], "must end in .md or .html"),
        ([], "no COMMAND given"),
        (["--", "/nonexistent/agent"], "cannot start"),
    ],
)
def test_cli_usage_errors(args: list[str], needle: str) -> None:
    proc = donegate("audit", *args)  # in-process: an exit code and one line need no process
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert needle in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_loop_on_donegate_run_behind_a_gate_is_ok_everywhere() -> None:
    report = audit([sys.executable, str(PROGRAMS / "gated_loop.py")], timeout=30)
    got = {r.name: r.verdict for r in report.scenarios}
    assert report.api == "openai-chat"
    assert got.pop("paused_chain") == "skipped"  # pause_turn is Anthropic's alone
    assert set(got.values()) == {"ok"}, got
    assert report.ok


@pytest.mark.parametrize("bug", [False, True])
def test_gateway_mode(bug: bool) -> None:
    from donegate.testing.audit._gateway import audit_gateway, gateway_upstream

    sys.path.insert(0, str(PROGRAMS))
    from proxy import start_proxy

    with gateway_upstream() as upstream:
        proxy = start_proxy(upstream.base_url, length_to_stop=bug)
        try:
            url = f"http://127.0.0.1:{proxy.server_address[1]}"
            report = audit_gateway(url, api="openai-chat", upstream=upstream)
        finally:
            proxy.shutdown()
    got = {r.name: r for r in report.scenarios}
    assert got["rate_limited"].verdict == "skipped" and got["paused_chain"].verdict == "skipped"
    if not bug:
        assert {r.verdict for r in report.scenarios} == {"ok", "skipped"}, got
        return
    assert got["truncated_text"].verdict == "false_done"
    assert "'length' arrived as 'stop'" in got["truncated_text"].detail
    assert got["truncated_call"].verdict == "altered"  # cut call now reads as a malformed one
    assert got["finished"].verdict == "ok" and got["refused"].verdict == "ok"


@pytest.mark.slow
def test_claude_code_preset() -> None:
    """Claude Code 2.1 under its preset: what it does on three endings (docs/audit.md)."""
    import os
    import shutil

    if shutil.which("claude") is None:
        if os.environ.get("DONEGATE_REQUIRE_CLAUDE"):
            pytest.fail("DONEGATE_REQUIRE_CLAUDE is set but the claude binary is not on PATH")
        pytest.skip("Claude Code is not installed (npm install -g @anthropic-ai/claude-code)")
    from donegate.testing.audit._presets import PRESETS

    preset = PRESETS["claude-code"]
    report = audit(
        list(preset.command), scenarios=pick_scenarios(["finished", "refused", "progress_report"]),
        tool=preset.tool, setup=preset.setup, timeout=120,
    )  # fmt: skip
    got = {r.name: r.verdict for r in report.scenarios}
    assert report.api == "anthropic-messages"
    # The happy path and a refusal are handled; a tool-less progress report ends the session.
    assert got == {"finished": "ok", "refused": "ok", "progress_report": "premature_stop"}, report


@pytest.mark.slow
def test_scenarios_dir(tmp_path: Path) -> None:
    (tmp_path / "cut_again.yaml").write_text(
        "answer: null\ncut_text: Half\nturns:\n  - {text: Half, ending: truncated}\n"
    )
    proc = _cli("--json", "--scenarios", str(tmp_path), "--", *NAIVE, "naive")
    assert proc.returncode == 1, proc.stderr
    (row,) = json.loads(proc.stdout)["scenarios"]
    assert (row["name"], row["verdict"], row["answer"]) == ("cut_again", "false_done", "Half")
    (tmp_path / "bad.yaml").write_text("turns: []\n")
    bad = _cli("--scenarios", str(tmp_path), "--", *NAIVE, "naive")
    assert bad.returncode == 2 and "bad.yaml: turns" in bad.stderr


def test_hung_and_crashed_programs() -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    report = audit(sleeper, scenarios=pick_scenarios(["finished"]), timeout=1)
    assert report.scenarios[0].verdict == "hung"
    assert report.seconds < 1 + 10  # killed at the timeout, not left running
    crasher = [sys.executable, "-c", "raise SystemExit(3)"]
    (row,) = audit(crasher, scenarios=pick_scenarios(["refused"]), timeout=10).scenarios
    assert (row.verdict, row.exit_code, row.requests) == ("crashed", 3, 0)


@pytest.mark.slow
def test_first_scenario_inexpressible_in_the_detected_format_is_skipped() -> None:
    got = verdicts([*NAIVE, "naive"], ["paused_chain"])
    assert got == {"paused_chain": "skipped"}
