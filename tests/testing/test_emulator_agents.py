"""Agent CLIs' sessions through ``donegate emulate``, scripts with no ``tools:`` section.

Claude Code, Codex CLI and Gemini CLI run their own tools (``Bash``, ``exec_command``,
``run_shell_command``): a script for them is only the model's turns. Each session here is sent
as that client sends it (its endpoint, streaming, its tool declarations, its way of returning a
tool result), to one ``donegate emulate`` process serving the three scripts; the real CLIs are
run against the emulator elsewhere (``test_claude_code.py``).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from donegate.messages import Ending, Turn
from donegate.models.registry import wire_format

SHELL_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}}
SCRIPTS: dict[str, dict[str, Any]] = {
    "claude": {
        "prompt": "count the files",
        "turns": [
            {"tool_call": "Bash", "args": {"command": "ls | wc -l"}, "id": "c1"},
            {"text": "There are 3 files."},
        ],
    },
    "codex": {
        "prompt": "count the files",
        "turns": [
            {"tool_call": "exec_command", "args": {"cmd": "ls | wc -l"}, "id": "c1"},
            {"text": "There are 3 files."},
        ],
    },
    "gemini": {
        "prompt": "count the files",
        "turns": [
            {"tool_call": "run_shell_command", "args": {"command": "ls | wc -l"}},
            {"text": "There are 3 files."},
        ],
    },
}


@contextmanager
def emulate(tmp_path: Path, *names: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    paths = []
    for name in names:
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(SCRIPTS[name], sort_keys=False), encoding="utf-8")
        paths.append(str(path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "donegate", "emulate", *paths, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    found = re.search(r"http://[\d.]+:\d+", proc.stderr.readline())
    assert found is not None
    try:
        yield found.group(0), proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def served(api: str, response: httpx2.Response) -> Turn:
    assert response.status_code == 200, response.text
    return wire_format(api).parse_stream(response.text)


def claude_code(url: str, *, offer: bool = True) -> list[Turn]:
    """Claude Code's requests: streamed Messages, its tools, results as ``tool_result`` blocks."""
    tools = [
        {"name": "Bash", "description": "Run a shell command", "input_schema": SHELL_SCHEMA},
        {"name": "Write", "description": "Write a file", "input_schema": {"type": "object"}},
    ]
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 32000,
        "stream": True,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "count the files"}]}],
        "tools": tools if offer else tools[1:],
    }
    head = {"anthropic-version": "2023-06-01", "x-api-key": "test",
            "x-donegate-conversation": "claude"}  # fmt: skip
    first = served("anthropic-messages", httpx2.post(f"{url}/v1/messages", json=body, headers=head))
    (call,) = first.tool_calls
    body["messages"] += [
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call.id, "content": "3"}]},
    ]  # fmt: skip
    second = httpx2.post(f"{url}/v1/messages", json=body, headers=head)
    return [first, served("anthropic-messages", second)]


def codex(url: str) -> list[Turn]:
    """Codex CLI's requests: streamed Responses, ``exec_command``, ``function_call_output``."""
    tools = [{"type": "function", "name": "exec_command", "description": "Run a command",
              "strict": False, "parameters": {"type": "object", "properties": {
                  "cmd": {"type": "string"}, "justification": {"type": "string"}}}},
             {"type": "function", "name": "write_stdin", "parameters": {}}]  # fmt: skip
    body: dict[str, Any] = {
        "model": "gpt-test",
        "instructions": "You are Codex.",
        "stream": True,
        "store": False,
        "tools": tools,
        "input": [{"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": "count the files"}]}],
    }  # fmt: skip
    head = {"authorization": "Bearer test", "x-donegate-conversation": "codex"}
    first = served("openai-responses", httpx2.post(f"{url}/v1/responses", json=body, headers=head))
    (call,) = first.tool_calls
    body["input"] += [
        {"type": "function_call", "call_id": call.id, "name": call.name,
         "arguments": json.dumps(call.arguments)},
        {"type": "function_call_output", "call_id": call.id, "output": "3"},
    ]  # fmt: skip
    second = httpx2.post(f"{url}/v1/responses", json=body, headers=head)
    return [first, served("openai-responses", second)]


def gemini_cli(url: str) -> list[Turn]:
    """Gemini CLI's requests: ``streamGenerateContent?alt=sse``, ``run_shell_command``."""
    declarations = [{"name": "run_shell_command", "description": "Run a shell command",
                     "parametersJsonSchema": SHELL_SCHEMA},
                    {"name": "write_todos", "parametersJsonSchema": {}}]  # fmt: skip
    body: dict[str, Any] = {
        "contents": [{"role": "user", "parts": [{"text": "count the files"}]}],
        "systemInstruction": {"parts": [{"text": "You are Gemini CLI."}]},
        "tools": [{"functionDeclarations": declarations}],
    }
    path = f"{url}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    head = {"x-goog-api-key": "test", "x-donegate-conversation": "gemini"}
    first = served("gemini", httpx2.post(path, json=body, headers=head))
    (call,) = first.tool_calls
    body["contents"] += [
        {"role": "model", "parts": [{"functionCall": {"name": call.name, "args": call.arguments}}]},
        {"role": "user", "parts": [{"functionResponse": {
            "name": call.name, "response": {"output": "3"}}}]},
    ]  # fmt: skip
    return [first, served("gemini", httpx2.post(path, json=body, headers=head))]


@pytest.mark.slow
def test_three_agent_sessions_are_served_from_scripts_without_stubs(tmp_path: Path) -> None:
    with emulate(tmp_path, "claude", "codex", "gemini") as (url, proc):
        sessions = {"claude": claude_code(url), "codex": codex(url), "gemini": gemini_cli(url)}
        status = httpx2.get(url + "/_donegate/status").json()
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    calls = {name: [(c.name, c.arguments) for c in turns[0].tool_calls]
             for name, turns in sessions.items()}  # fmt: skip
    assert calls == {
        "claude": [("Bash", {"command": "ls | wc -l"})],
        "codex": [("exec_command", {"cmd": "ls | wc -l"})],
        "gemini": [("run_shell_command", {"command": "ls | wc -l"})],
    }
    for turns in sessions.values():
        assert [t.ending for t in turns] == [Ending.TOOL_USE, Ending.COMPLETE]
        assert turns[1].text == "There are 3 files."
    assert (status["unused_turns"], status["errors"], status["warnings"]) == (0, 0, 0)
    summary = json.loads(out)
    assert (summary["requests"], summary["unused_turns"], summary["warnings"]) == (6, 0, 0)
    assert "warning" not in err


def test_a_call_the_client_did_not_offer_is_served_with_a_warning(tmp_path: Path) -> None:
    with emulate(tmp_path, "claude") as (url, proc):
        first, second = claude_code(url, offer=False)  # Bash left out of the request
        log = httpx2.get(url + "/_donegate/requests").json()
    out, err = proc.communicate()
    assert [c.name for c in first.tool_calls] == ["Bash"] and second.text == "There are 3 files."
    warning = (
        f"{tmp_path / 'claude.yaml'}: turns[0]: calls 'Bash', a tool the request did not offer "
        "(offered: Write); served as scripted"
    )
    assert log[0]["warnings"] == [warning]
    assert f"donegate emulator: warning: conversation 'claude': {warning}\n" in err
    assert json.loads(out)["warnings"] == 1
