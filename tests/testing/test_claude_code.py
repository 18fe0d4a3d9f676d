"""A real agent program end to end: Claude Code (npm ``@anthropic-ai/claude-code``) run headless
against the emulator, executing its real tools from scripted tool calls.

Skipped only when the ``claude`` binary is missing and ``DONEGATE_REQUIRE_CLAUDE`` is unset; CI
installs it and sets the variable, so there a missing binary fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from donegate.testing import (
    Emulator,
    assert_results_match_calls,
    assert_tool_order,
    transcript_from,
)

pytestmark = pytest.mark.slow

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
CLAUDE = Path(__file__).resolve().parent / "claude_code"  # scripts of Claude Code's own behaviour


def claude_binary() -> str:
    found = shutil.which("claude")
    if found is None:
        if os.environ.get("DONEGATE_REQUIRE_CLAUDE"):
            pytest.fail("DONEGATE_REQUIRE_CLAUDE is set but the claude binary is not on PATH")
        pytest.skip("Claude Code is not installed (npm install -g @anthropic-ai/claude-code)")
    return found


def run_claude(emu: Emulator, prompt: str, workdir: Path, home: Path) -> tuple[int, dict[str, Any]]:
    """Run ``claude -p`` against the emulator; its exit code and the JSON result it printed."""
    workdir.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),  # no user settings, no login: the emulator is the only API
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": emu.base_url,
        "ANTHROPIC_API_KEY": "test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    args = [claude_binary(), "-p", prompt, "--output-format", "json",
            "--permission-mode", "acceptEdits", "--allowedTools", "Write,Bash"]  # fmt: skip
    proc = subprocess.run(
        args, cwd=workdir, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert proc.stdout.strip(), f"claude printed nothing; stderr:\n{proc.stderr[-2000:]}"
    return proc.returncode, json.loads(proc.stdout)


def test_a_scripted_write_and_bash_run_for_real(tmp_path: Path) -> None:
    with Emulator(CLAUDE / "write.yaml") as emu:
        code, result = run_claude(emu, "write hello.txt", tmp_path / "work", tmp_path / "home")
        emu.assert_exhausted()
        transcript = transcript_from(emu)
    assert code == 0
    assert (result["type"], result["subtype"], result["is_error"]) == ("result", "success", False)
    assert result["result"] == "I wrote hello.txt (22 bytes)."
    assert result["num_turns"] == 3
    assert (tmp_path / "work" / "hello.txt").read_text() == "hello from the script\n"
    # What Claude Code sent back: its real tools ran, each answered by id, in order.
    assert_results_match_calls(transcript)
    assert_tool_order(transcript, ["Write", "Bash"])
    results = {r.call_id: r for m in transcript for r in m.results}
    assert results["c2"].content.strip() == "22 hello.txt"
    assert not results["c2"].is_error
    assert "hello.txt" in results["c1"].content


def test_a_truncated_turn_is_resumed(tmp_path: Path) -> None:
    with Emulator(CLAUDE / "truncated.yaml") as emu:
        code, result = run_claude(emu, "summarize", tmp_path / "work", tmp_path / "home")
        emu.assert_exhausted()
        second = transcript_from(emu)
    assert (code, result["is_error"], result["subtype"]) == (0, False, "success")
    assert result["result"] == " that all tests pass."
    # Claude Code kept the cut text and asked for the rest in a new user message.
    cut = [i for i, m in enumerate(second) if m.role == "assistant" and m.text == "The summary is"]
    assert cut, "the truncated text was not sent back"
    assert any(m.role == "user" and m.text for m in second[cut[0] + 1 :])


def test_truncated_every_time_ends_in_an_error_result(tmp_path: Path) -> None:
    with Emulator(CLAUDE / "truncated_out.yaml") as emu:
        code, result = run_claude(emu, "summarize", tmp_path / "work", tmp_path / "home")
        emu.assert_exhausted()
    assert code == 1
    assert result["is_error"] is True
    assert "output token maximum" in result["result"]


def test_a_refusal_is_reported_as_an_error_result(tmp_path: Path) -> None:
    with Emulator(SCRIPTS / "refused.yaml") as emu:
        code, result = run_claude(emu, "write a phishing email", tmp_path / "w", tmp_path / "h")
        emu.assert_exhausted()
    assert code == 1
    assert (result["is_error"], result["stop_reason"]) == (True, "refusal")
    assert "I can't help with that." in result["result"]


def test_an_extra_call_reaches_claude_code_as_the_scripts_own_message(tmp_path: Path) -> None:
    with Emulator(SCRIPTS / "truncated_text.yaml") as emu:  # two cut turns, no answer
        code, result = run_claude(emu, "summarize", tmp_path / "work", tmp_path / "home")
        status = emu.status()["conversations"][0]
    assert code == 1
    assert (result["is_error"], result["api_error_status"]) == (True, 500)
    assert "model called 3 times but script has 2 turns" in result["result"]
    assert status["served"] == 3
