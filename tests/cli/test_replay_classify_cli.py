"""The CLI contracts of ``donegate classify`` and ``donegate replay``: output and exit codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests._cli import donegate as in_process

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def donegate(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return in_process(*args, input=stdin)  # output and exit codes: no process needed


def test_classify_prints_one_json_object() -> None:
    body = {"choices": [{"finish_reason": "length", "message": {"content": "The refund has"}}]}
    out = donegate("classify", "--api", "openai-chat", "-", stdin=json.dumps(body))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "ending": "truncated",
        "tool_calls": 0,
        "text_nonempty": True,
        "raw_reason": "length",
        "detail": None,
    }
    assert out.stderr == ""  # the body looks like the --api given: no hint


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
    got = json.loads(out.stdout)
    assert (got["ending"], got["detail"]) == ("truncated", "stream ended before its final event")
    err = tmp_path / "e.json"
    err.write_text('{"error": {"code": "context_length_exceeded", "message": "too long"}}')
    out = donegate("classify", "--api", "openai-chat", "--status", "400", str(err))
    assert json.loads(out.stdout)["ending"] == "context_exceeded"


OPENAI_BODY = {
    "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
    "object": "chat.completion",
    "created": 1741570283,
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello.", "refusal": None},
            "finish_reason": "stop",
        }
    ],
}


def test_classify_prints_the_detail_of_a_missing_finish_reason() -> None:
    body = {"object": "chat.completion", "choices": [{"message": {"content": "4"}}]}
    out = donegate("classify", "--api", "openai-chat", "-", stdin=json.dumps(body))
    got = json.loads(out.stdout)
    assert (got["ending"], got["detail"], got["raw_reason"]) == ("error", "no finish reason", None)


@pytest.mark.parametrize(
    ("api", "code"),
    [("gemini", 0), ("anthropic-messages", 0), ("bedrock-converse", 2), ("cohere", 2)],
)
def test_a_body_of_another_format_says_which_it_looks_like(api: str, code: int) -> None:
    """An OpenAI body read as Gemini is a quiet `error` (read as Bedrock, a shape error): either
    way one stderr line says which format it looks like."""
    out = donegate("classify", "--api", api, "-", stdin=json.dumps(OPENAI_BODY))
    assert out.returncode == code, out.stderr
    if code == 0:
        assert json.loads(out.stdout)["ending"] == "error"
    else:
        assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "looks like openai-chat" in lines[0] and f"not {api}" in lines[0]
    assert "Traceback" not in out.stderr


def test_a_stream_of_another_format_says_which_it_looks_like() -> None:
    chunk = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": "a"}}],
    }
    sse = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n"
    out = donegate("classify", "--api", "anthropic-messages", "--stream", "-", stdin=sse)
    assert "looks like openai-chat, not anthropic-messages" in out.stderr


def test_a_shape_error_carries_the_hint_on_its_one_line() -> None:
    """Read as Responses, the OpenAI body fails on its shape: one line, exit 2, with the hint."""
    body = {**OPENAI_BODY, "output": "not a list", "status": "completed"}
    body.pop("choices")
    body["object"] = "chat.completion"
    out = donegate("classify", "--api", "openai-responses", "-", stdin=json.dumps(body))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "output" in lines[0] and "looks like openai-chat" in lines[0]
    assert out.stdout == ""


def test_mistral_and_openai_chat_bodies_are_one_family() -> None:
    out = donegate("classify", "--api", "mistral", "-", stdin=json.dumps(OPENAI_BODY))
    assert out.returncode == 0 and out.stderr == ""
    assert json.loads(out.stdout)["ending"] == "complete"


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
