"""The CLI contracts of ``donegate classify`` and ``donegate replay``: output and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def donegate(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "donegate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_classify_prints_one_json_object() -> None:
    body = {"choices": [{"finish_reason": "length", "message": {"content": "The refund has"}}]}
    out = donegate("classify", "--api", "openai-chat", "-", stdin=json.dumps(body))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "ending": "truncated",
        "tool_calls": 0,
        "text_nonempty": True,
        "raw_reason": "length",
    }


def test_classify_reads_a_stream_and_an_error_status(tmp_path: Path) -> None:
    sse = tmp_path / "s.txt"
    sse.write_text(
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
        '"type":"message","role":"assistant","content":[],"model":"m","usage":{}}}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"text","text":""}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"text_delta","text":"Half"}}\n\n'
    )
    out = donegate("classify", "--api", "anthropic-messages", "--stream", str(sse))
    assert json.loads(out.stdout)["ending"] == "truncated"  # stopped before its final event
    err = tmp_path / "e.json"
    err.write_text('{"error": {"code": "context_length_exceeded", "message": "too long"}}')
    out = donegate("classify", "--api", "openai-chat", "--status", "400", str(err))
    assert json.loads(out.stdout)["ending"] == "context_exceeded"


@pytest.mark.parametrize(
    ("args", "stdin", "needle"),
    [
        (["classify", "--api", "openai-chat", "-"], "{not json", "not valid JSON"),
        (["classify", "--api", "openai-chat", "/no/such/file"], None, "/no/such/file"),
        (["classify", "--api", "openai-chat", "-"], "[1, 2]", "expected an object"),
        (["classify", "--api", "carrier-pigeon", "-"], "{}", "carrier-pigeon"),
    ],
)
def test_classify_bad_input_exits_2_with_one_line(
    args: list[str], stdin: str | None, needle: str
) -> None:
    out = donegate(*args, stdin=stdin)
    assert out.returncode == 2
    assert needle in out.stderr
    assert out.stdout == ""


@pytest.mark.parametrize("api", [None, "openai-chat", "anthropic-messages", "gemini"])
def test_replay_json_reports_what_the_provider_received(api: str | None) -> None:
    args = ["replay", str(SCRIPTS / "refund.yaml"), "--json"]
    if api:
        args += ["--api", api, "--stream"]
    out = donegate(*args)
    assert out.returncode == 0, out.stderr + out.stdout
    got = json.loads(out.stdout)
    assert got["status"] == "complete"
    assert got["model_calls"] == 4
    assert got["tool_calls"] == {"get_order": 1, "get_refund_policy": 1, "start_refund": 1}
    assert got["unused_turns"] == 0
    assert got["ending"] == "complete"
    assert set(got) >= {
        "status",
        "text",
        "output",
        "model_calls",
        "tool_calls",
        "unused_turns",
        "ending",
        "reason",
    }


def test_replay_exits_1_when_an_expectation_fails(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(
        "prompt: find x\n"
        "tools: {search: {returns: {hits: []}}}\n"
        "turns:\n"
        "  - {tool_call: search, args: {q: x}}\n"
        "  - {text: The answer is, ending: truncated}\n"
        "  - {text: The answer is, ending: truncated}\n"
        "expect: {status: complete, model_calls: 2}\n"
    )
    out = donegate("replay", str(script), "--json")
    assert out.returncode == 1
    got = json.loads(out.stdout)
    assert got["status"] == "truncated"
    assert "expect.status: wanted 'complete', got 'truncated'" in got["failures"]
    assert "expect.model_calls: wanted 2, got 3" in got["failures"]


def test_replay_exits_2_naming_file_and_field(tmp_path: Path) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text("prompt: x\nturns:\n  - {text: hi, ending: done}\n")
    out = donegate("replay", str(script))
    assert out.returncode == 2
    assert "bad.yaml" in out.stderr and "turns[0].ending" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
