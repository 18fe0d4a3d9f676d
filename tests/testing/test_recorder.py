"""Recording: a real conversation goes into a script file that replays to the same transcript.

The "real" provider is a script played over HTTP (a MockTransport, or another emulator), so the
recorded bytes are exactly what the official SDKs receive from the provider's wire format.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest

import donegate
from donegate.events import RunEnded
from donegate.loop import RunResult, Status
from donegate.messages import Message
from donegate.testing import Emulator, ScriptedModel, load_script
from donegate.testing.player import BASE_URL
from donegate.testing.recorder import (
    REDACTED,
    Recorder,
    RecordingMismatch,
    RecordingTransport,
    Redactor,
)
from donegate.testing.script import parse_script

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
APIS = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")


def model_over(api: str, transport: Any) -> Any:
    """donegate's SDK-backed model for `api`, its client sending through `transport`."""
    from donegate.models.google import GeminiModel
    from donegate.models.sdk import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel

    http = httpx2.Client(transport=transport)
    if api in ("openai-chat", "openai-responses"):
        import openai

        client = openai.OpenAI(api_key="sk-test", base_url=f"{BASE_URL}/v1", http_client=http)
        cls = OpenAIChatModel if api == "openai-chat" else OpenAIResponsesModel
        return cls(client, "gpt-4o-mini")
    if api == "anthropic-messages":
        import anthropic

        return AnthropicModel(anthropic.Anthropic(api_key="k", base_url=BASE_URL, http_client=http),
                              "claude-sonnet-4-6")  # fmt: skip
    from google import genai
    from google.genai import types

    options = types.HttpOptions(base_url=BASE_URL, httpx_client=http)
    return GeminiModel(genai.Client(api_key="k", http_options=options), "gemini-2.5-flash")


def run(script: Any, model: Any, stream: bool, prompt: str | None = None) -> RunResult:
    options: dict[str, Any] = {"tools": script.tools(), "system": script.system,
                               "max_steps": script.max_steps}  # fmt: skip
    prompt = prompt or script.prompt
    if not stream:
        return donegate.run(prompt, model=model, **options)

    async def consume() -> RunResult:
        last = None
        async for event in donegate.stream(prompt, model=model, **options):
            last = event
        assert isinstance(last, RunEnded)
        return last.result

    return asyncio.run(consume())


def shape(transcript: tuple[Message, ...]) -> list[Any]:
    """The transcript as plain data: roles, texts, calls and results (provider details left out)."""
    return [
        [m.role, m.text, [(c.id, c.name, c.arguments) for c in m.tool_calls],
         [(r.call_id, r.content, r.is_error) for r in m.results]]
        for m in transcript
    ]  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("api", APIS)
def test_a_recorded_conversation_replays_to_the_same_transcript(
    api: str, stream: bool, tmp_path: Path
) -> None:
    script = load_script(SCRIPTS / "refund.yaml")
    recorder = Recorder()
    upstream = httpx2.MockTransport(ScriptedModel(script).handler(api))
    recorded = run(script, model_over(api, RecordingTransport(upstream, recorder)), stream)
    assert recorded.status is Status.COMPLETE
    saved = recorder.save(tmp_path / "refund.yaml")

    replayed_script = load_script(saved)
    assert [c.id for t in replayed_script.turns for c in t.tool_calls] == ["c1", "c2", "c3"]
    player = ScriptedModel(replayed_script)
    replayed = run(replayed_script, model_over(api, httpx2.MockTransport(player.handler(api))),
                   stream)  # fmt: skip
    player.assert_exhausted()
    assert shape(replayed.transcript) == shape(recorded.transcript)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_gemini_malformed_call_is_recorded_with_its_finish_message(stream: bool) -> None:
    said = "Malformed function call: call:default_api:search{q: x}"
    script = parse_script(
        {
            "prompt": "find x",
            "tools": {"search": {"returns": {"hits": []}}},
            "turns": [
                {"ending": "malformed_tool_call", "stop_details": said},
                {"tool_call": "search", "args": {"q": "x"}},
                {"text": "Nothing found."},
            ],
        }
    )
    recorder = Recorder()
    upstream = httpx2.MockTransport(ScriptedModel(script).handler("gemini"))
    recorded = run(script, model_over("gemini", RecordingTransport(upstream, recorder)), stream)
    assert recorded.status is Status.COMPLETE  # recovered: the loop named the problem
    data = recorder.build()
    assert data["turns"][0] == {"text": "", "ending": "malformed_tool_call", "stop_details": said}
    recorder.check(data)  # and the recording replays, through the loop too


def test_the_file_reads_like_a_hand_written_script(tmp_path: Path) -> None:
    script = load_script(SCRIPTS / "refund.yaml")
    recorder = Recorder()
    upstream = httpx2.MockTransport(ScriptedModel(script).handler("anthropic-messages"))
    run(script, model_over("anthropic-messages", RecordingTransport(upstream, recorder)), False)
    text = recorder.dumps()
    assert "- {tool_call: get_order, args: {order_id: '55219'}, id: c1}" in text
    assert "- {text: I've started a refund of EUR 14.99 for order 55219.}" in text
    assert "start_refund: {returns: {refund_id: rf_88, state: pending}}" in text
    assert "msg_" not in text  # no provider ids
    assert "claude-" not in text  # no model names


def test_provider_ids_become_c1_c2_and_usage_is_dropped(tmp_path: Path) -> None:
    data = {
        "prompt": "look up two orders",
        "tools": {"get_order": {"results": [{"returns": {"n": 1}}, {"returns": {"n": 2}}]}},
        "turns": [
            {
                "tool_call": "get_order",
                "args": {"order_id": "1"},
                "id": "toolu_01AbCdEf",
                "usage": {"input_tokens": 120, "output_tokens": 9},
            },
            {"tool_call": "get_order", "args": {"order_id": "2"}, "id": "call_Zz9"},
            {"text": "Both found."},
        ],
    }
    script = parse_script(data)
    recorder = Recorder()
    upstream = httpx2.MockTransport(ScriptedModel(script).handler("openai-chat"))
    run(script, model_over("openai-chat", RecordingTransport(upstream, recorder)), False)
    built = recorder.build()
    assert [t.get("id") for t in built["turns"]] == ["c1", "c2", None]
    assert not any("usage" in t for t in built["turns"])
    assert "120" not in recorder.dumps()
    assert built["tools"] == {"get_order": {"results": [{"returns": {"n": 1}},
                                                        {"returns": {"n": 2}}]}}  # fmt: skip


SECRETS = {
    "anthropic": "sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234",
    "google": "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "bearer": "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
    "custom": "ACCT-99812-77",
}


def test_planted_secrets_are_redacted_everywhere(tmp_path: Path) -> None:
    data = {
        "prompt": f"my key is {SECRETS['anthropic']}; deploy with account {SECRETS['custom']}",
        "system": f"internal token {SECRETS['openai']}",
        "tools": {
            "deploy": {"returns": {"log": f"used {SECRETS['google']}", "ok": True}},
        },
        "turns": [
            {"tool_call": "deploy",
             "args": {"auth": SECRETS["bearer"], "note": f"key {SECRETS['openai']}"}},
            {"text": f"Deployed with {SECRETS['anthropic']} on {SECRETS['custom']}."},
        ],
    }  # fmt: skip
    script = parse_script(data)
    recorder = Recorder(patterns=[r"ACCT-\d{5}-\d{2}"])
    upstream = httpx2.MockTransport(ScriptedModel(script).handler("anthropic-messages"))
    run(script, model_over("anthropic-messages", RecordingTransport(upstream, recorder)), False)
    path = recorder.save(tmp_path / "deploy.yaml")  # redacted, and still replays
    text = path.read_text()
    for name, secret in SECRETS.items():
        assert secret not in text, name
        assert secret.split()[-1][-12:] not in text, name
    assert text.count(REDACTED) >= 7
    saved = load_script(path)
    assert saved.prompt == f"my key is {REDACTED}; deploy with account {REDACTED}"
    assert saved.turns[0].tool_calls[0].arguments == {"auth": REDACTED, "note": f"key {REDACTED}"}


def test_redactor_patterns() -> None:
    redact = Redactor([r"\bPIN \d{4}\b"])
    assert redact("use sk-ant-api03-abcdefgh12 now") == f"use {REDACTED} now"
    assert redact({"a": ["Authorization: Bearer abc.def.ghi123"]}) == {
        "a": [f"Authorization: {REDACTED}"]
    }
    assert redact("PIN 1234 and sk-short") == f"{REDACTED} and sk-short"
    assert redact(12) == 12


def test_a_recording_that_does_not_replay_is_refused(tmp_path: Path) -> None:
    script = load_script(SCRIPTS / "refund.yaml")
    recorder = Recorder()
    upstream = httpx2.MockTransport(ScriptedModel(script).handler("openai-chat"))
    run(script, model_over("openai-chat", RecordingTransport(upstream, recorder)), False)
    data = recorder.build()
    data["turns"][1]["args"]["sku"] = "MUG-02"  # an edit that no longer matches the run
    with pytest.raises(RecordingMismatch, match=r"turns\[1\]: recorded"):
        recorder.check(data)
    data = recorder.build()
    del data["turns"][-1]  # a missing turn
    with pytest.raises(RecordingMismatch, match="model called 4 times but script has 3 turns"):
        recorder.check(data)


def test_an_agent_that_re_appends_the_prompt_does_not_replay_as_a_loop(tmp_path: Path) -> None:
    """The seed-004 bug, recorded: the script is refused rather than saved as a false fixture."""
    import openai

    script = load_script(SCRIPTS / "tool_then_text.yaml")
    recorder = Recorder(verify="loop")
    upstream = httpx2.MockTransport(ScriptedModel(script).handler("openai-chat"))
    http = httpx2.Client(transport=RecordingTransport(upstream, recorder))
    client = openai.OpenAI(api_key="k", base_url=f"{BASE_URL}/v1", http_client=http)
    messages: list[Any] = [{"role": "user", "content": "find x"}]
    first = client.chat.completions.create(model="m", messages=messages).choices[0].message
    messages += [
        first.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "c1", "content": '{"hits": ["a"]}'},
        {"role": "user", "content": "find x"},
    ]  # the bug: the prompt again
    client.chat.completions.create(model="m", messages=messages)
    target = tmp_path / "bad.yaml"
    with pytest.raises(RecordingMismatch, match="transcript message"):
        recorder.save(target)
    assert not target.exists()


def test_nothing_recorded_is_an_error() -> None:
    with pytest.raises(donegate.errors.UserError, match="nothing was recorded"):
        Recorder().build()


def test_errors_and_retries_are_recorded_as_http_error_turns(tmp_path: Path) -> None:
    script = load_script(SCRIPTS / "http_error_then_text.yaml")
    recorder = Recorder()
    upstream = httpx2.MockTransport(ScriptedModel(script).handler("anthropic-messages"))
    result = run(script, model_over("anthropic-messages", RecordingTransport(upstream, recorder)),
                 False)  # fmt: skip
    assert result.status is Status.COMPLETE
    built = recorder.build()
    assert built["turns"][0] == {"http_error": 529, "message": "Overloaded", "retry_after": 0.01}
    recorder.save(tmp_path / "overloaded.yaml")


def test_the_emulator_records_as_a_proxy_in_front_of_another_emulator(tmp_path: Path) -> None:
    import anthropic

    from donegate.models.sdk import AnthropicModel
    from donegate.testing import assert_results_match_calls, assert_tool_order

    script = load_script(SCRIPTS / "refund.yaml")
    with Emulator(script) as real, Emulator(upstream=real.base_url) as proxy:
        client = anthropic.Anthropic(api_key="sk-ant-api03-secretsecret", base_url=proxy.base_url)
        result = run(script, AnthropicModel(client, "claude-sonnet-4-6"), True)
        assert result.status is Status.COMPLETE
        real.assert_exhausted()
        log = proxy.requests
    assert all("x-api-key" not in e["headers"] for e in log)
    assert proxy.recorder is not None
    path = proxy.recorder.save(tmp_path / "proxied.yaml")
    replayed_script = load_script(path)
    player = ScriptedModel(replayed_script)
    replayed = run(replayed_script, player, False)
    player.assert_exhausted()
    assert shape(replayed.transcript) == shape(result.transcript)
    assert_results_match_calls(replayed)
    assert_tool_order(replayed, ["get_order", "get_refund_policy", "start_refund"])
    assert not re.search(r"msg_|toolu_|req_", path.read_text())
