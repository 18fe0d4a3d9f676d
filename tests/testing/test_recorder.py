"""Recording: a real conversation goes into a script file that replays to the same transcript.

The "real" provider is a script played over HTTP (a MockTransport, or another emulator), so the
recorded bytes are exactly what the official SDKs receive from the provider's wire format.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

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


# -- redaction of every byte written: the script and the request log ---------------------------

PLANTED = {
    "anthropic_key": "sk-ant-api03-Pl4ntedAnthr0picKey9",
    "openai_key": "sk-proj-Pl4ntedOpenAIKey0000xyz",
    "google_key": "AIzaSyPl4ntedGoogleKey1234567890abc",
    "github_token": "ghp_Pl4ntedGitHubToken0123456789ab",
    "slack_token": "xoxb-Pl4nted-Slack-Token",
    "aws_key_id": "AKIAPL4NTEDAWSKEY123",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.Pl4ntedJwtSignature0",
    "stripe": "sk_live_Pl4ntedStripeKey1234",
    "custom": "ACCT-99812-77",  # only the --redact pattern knows this one
    "json_password": "hunter2-Blue-Pl4nted",
    "dsn_url_password": "Pg-s3cret-Pl4nted",
    "libpq_password": "LibPq-pw-Pl4nted",
    "ado_password": "Ado-Pw-Pl4nted",
    "url_userinfo": "Url-pass-Pl4nted",
    "client_secret": "cs-Plain-Pl4nted-5521",
    "access_token": "at-plain-Pl4nted-8812",
    "env_passwd": "Env-pw-Pl4nted-6610",
    "yaml_passwd": "Yaml-pw-Pl4nted-3",
    "basic_auth": "ZGVwbG95OmJhc2ljLXB3LXBsNG50ZWQ=",
    "query_password": "Query-pw-Pl4nted-9",
    "query_api_key": "QueryKey-Pl4nted-123",
    "header_token": "hdr-tok-Pl4nted-77",
    "pem": "MIIEpl4ntedPrivateKeyBodyAAAA",
}
"""Secrets of 23 shapes; none may reach a byte the recorder or the emulator writes."""


def planted_script() -> dict[str, Any]:
    s = PLANTED
    return {
        "prompt": f"deploy with {s['anthropic_key']} and account {s['custom']}; "
        f"db postgresql://app:{s['dsn_url_password']}@db.internal:5432/prod",
        "system": f"internal key {s['openai_key']}; repo https://deploy:{s['url_userinfo']}"
        f"@git.example.org/app.git",
        "tools": {
            "read_config": {
                "returns": {
                    "env": f"export DB_PASSWD={s['env_passwd']}\nGOOGLE={s['google_key']}",
                    "yaml": f"passwd: {s['yaml_passwd']}\nuser: app",
                    "client_secret": s["client_secret"],
                    "pem": f"-----BEGIN RSA PRIVATE KEY-----\n{s['pem']}\n"
                    "-----END RSA PRIVATE KEY-----",
                }
            },
            "deploy": {"returns": {"log": f"Authorization: Basic {s['basic_auth']}", "ok": True}},
        },
        "turns": [
            {"tool_call": "read_config", "args": {"path": "/etc/app.env"}},
            {
                "tool_call": "deploy",
                "args": {
                    "password": s["json_password"],
                    "access_token": s["access_token"],
                    "dsn": f"host=db user=app password={s['libpq_password']} dbname=prod",
                    "conn": f"Server=db;Database=app;User Id=sa;Password={s['ado_password']};",
                    "note": f"tokens {s['github_token']} {s['slack_token']} {s['aws_key_id']}",
                    "auth": f"Bearer {s['jwt']}",
                    "stripe": s["stripe"],
                },
            },
            {"text": f"Deployed for {s['custom']} with {s['anthropic_key']}."},
        ],
    }


def _serving(args: list[str]) -> tuple[str, subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "donegate", *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"http://[\d.]+:\d+", line)
    if found is None:
        proc.kill()
        pytest.fail(f"no URL announced: {line}{proc.stderr.read()}")
    return found.group(0), proc


@pytest.mark.slow
@pytest.mark.parametrize(
    "command", [["record", "-o"], ["emulate", "--record"]], ids=["record", "emulate-upstream"]
)
def test_no_planted_secret_reaches_any_byte_written(tmp_path: Path, command: list[str]) -> None:
    import openai

    from donegate.models.sdk import OpenAIChatModel

    script = parse_script(planted_script())
    out, log = tmp_path / "deploy.yaml", tmp_path / "requests.jsonl"
    with Emulator(script) as real:
        verb, flag = command
        url, proc = _serving(
            [verb, "--upstream", real.base_url, flag, str(out), "--log", str(log),
             "--redact", r"ACCT-\d{5}-\d{2}"]
        )  # fmt: skip
        try:
            client = openai.OpenAI(
                api_key=PLANTED["openai_key"],
                base_url=f"{url}/v1",
                max_retries=0,
                default_query={
                    "password": PLANTED["query_password"],
                    "api_key": PLANTED["query_api_key"],
                },
                default_headers={"x-auth-token": PLANTED["header_token"]},
            )
            result = run(script, OpenAIChatModel(client, "gpt-4o-mini"), False)
            assert result.status is Status.COMPLETE
            real.assert_exhausted()
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and all(json.loads(x)["kind"] == "model" for x in lines)
    assert "password=[REDACTED]" in json.loads(lines[0])["query"]
    written = out.read_bytes() + log.read_bytes()
    for name, secret in PLANTED.items():
        assert secret.encode() not in written, name
        assert secret[-10:].encode() not in written, f"{name} (tail)"
    assert written.count(REDACTED.encode()) >= len(PLANTED)
    saved = load_script(out)  # the redacted script still parses (and was replayed on save)
    assert saved.turns[1].tool_calls[0].arguments["password"] == REDACTED


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["record", "--upstream", "http://127.0.0.1:9", "-o", "x.yaml", "--redact", "(["],
        ["emulate", str(SCRIPTS / "refund.yaml"), "--redact", "(["],
    ],
    ids=["record", "emulate"],
)
def test_an_invalid_redact_pattern_is_one_line_and_exit_2(args: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "donegate", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "--redact '(['" in lines[0] and "regular expression" in lines[0]
    assert not (tmp_path / "x.yaml").exists()


@pytest.mark.slow
def test_the_emulator_log_applies_redact_patterns_when_serving_scripts(tmp_path: Path) -> None:
    """Not only in proxy mode: a serving emulator's log goes through the recorder's patterns."""
    import anthropic

    log = tmp_path / "log.jsonl"
    script = parse_script(
        {"prompt": "p", "turns": [{"text": "ok"}], "expect": {"status": "complete"}}
    )
    with Emulator(script, log=log, recorder=Recorder(patterns=[r"PIN-\d{4}"])) as emu:
        client = anthropic.Anthropic(api_key="k", base_url=emu.base_url, max_retries=0)
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=9,
            messages=[{"role": "user", "content": "PIN-4321 and password=opensesame-1"}],
        )
    text = log.read_text(encoding="utf-8")
    assert "PIN-4321" not in text and "opensesame-1" not in text
    assert json.loads(text.splitlines()[0])["body"]["messages"][0]["content"] == (
        f"{REDACTED} and password={REDACTED}"
    )


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("postgresql://app:pw-1@db:5432/x", f"postgresql://app:{REDACTED}@db:5432/x"),
        ("redis://:pw-2@cache:6379/0", f"redis://:{REDACTED}@cache:6379/0"),
        ("host=db password=pw-3 user=u", f"host=db password={REDACTED} user=u"),
        ("Server=s;Password=pw-4;Db=d", f"Server=s;Password={REDACTED};Db=d"),
        ("/v1?user=u&api_key=pw-5&n=1", f"/v1?user=u&api_key={REDACTED}&n=1"),
        ("?access_token=pw-6", f"?access_token={REDACTED}"),
        ('{"password": "pw\\"7", "n": 1}', f'{{"password": "{REDACTED}", "n": 1}}'),
        ('{\\"client_secret\\": \\"pw-8\\"}', f'{{\\"client_secret\\": \\"{REDACTED}\\"}}'),
        ("passwd: pw-9\nuser: u", f"passwd: {REDACTED}\nuser: u"),
        ("export GH_TOKEN=pw-10", f"export GH_TOKEN={REDACTED}"),
        ("secret = 'pw 11'", f"secret = '{REDACTED}'"),
        ("Authorization: Basic dXNlcjpwdy0xMg==", f"Authorization: {REDACTED}"),
        ("x-api-key: pw-13", f"x-api-key: {REDACTED}"),
        ("Cookie: session=pw-14", f"Cookie: {REDACTED}"),
    ],
)
def test_secrets_by_structure_inside_text(raw: str, clean: str) -> None:
    assert Redactor()(raw) == clean


@pytest.mark.parametrize(
    "benign",
    [
        "max_tokens=100&temperature=0.5",
        '{"token": 5, "max_tokens": 100}',
        "token_count: 12",
        "https://example.org/path?q=1",
        "the author: Ada",
        "user@example.org",
        "ratio 3:2 at 10:30",
    ],
)
def test_ordinary_text_is_left_alone(benign: str) -> None:
    assert Redactor()(benign) == benign


def test_secrets_by_key_in_json_values() -> None:
    redact = Redactor()
    value = {
        "password": "p",
        "db_passwd": "p",
        "PGPASSWORD": "p",
        "client_secret": "p",
        "access_token": "p",
        "apiKey": "p",
        "x-api-key": "p",
        "Authorization": "p",
        "credentials": "p",
        "nested": [{"refresh_token": "p"}],
        # not secrets
        "max_tokens": 5,
        "promptTokenCount": 3,
        "cache_key": "c",
        "idempotency_key": "i",
        "author": "a",
        "token_count": "7",
    }
    out = redact(value)
    secret = [k for k, v in out.items() if v == REDACTED]
    assert secret == list(value)[:9]
    assert out["nested"] == [{"refresh_token": REDACTED}]
    assert {k: out[k] for k in list(value)[10:]} == {k: value[k] for k in list(value)[10:]}


@given(st.lists(st.sampled_from([
    "password=", "pw-1", " ", "&", "postgresql://u:", "@h/", '"secret": "', '"', "\n",
    "Authorization: ", "Basic dXNlcjpwYXNzd29yZA==", "sk-ant-api03-abcdefgh12", "token: ",
    "=", ":", "[REDACTED]", "'", "api_key", "x",
]), max_size=12).map("".join))  # fmt: skip
def test_redacting_twice_is_redacting_once(text: str) -> None:
    redact = Redactor([r"ACCT-\d+"])
    once = redact(text)
    assert redact(once) == once
