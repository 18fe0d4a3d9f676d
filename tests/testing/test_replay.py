"""``donegate replay`` is as strict as the player: unused turns and a script that runs out fail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from donegate.errors import ScriptError
from donegate.testing.replay import replay
from donegate.testing.script import parse_script
from tests._cli import donegate

MODES = [None, "openai-chat", "anthropic-messages", "gemini"]


def script_file(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


ONE_UNUSED: dict[str, Any] = {
    "prompt": "say hi",
    "turns": [{"text": "hi"}, {"text": "never played"}],
}
RUNS_OUT: dict[str, Any] = {
    "prompt": "find x",
    "tools": {"search": {"returns": {"hits": []}}},
    "turns": [{"tool_call": "search", "args": {"q": "x"}}],
}


@pytest.mark.parametrize("api", MODES, ids=lambda a: a or "direct")
def test_unused_turns_fail_with_the_players_message(api: str | None) -> None:
    done = replay(parse_script(ONE_UNUSED, source="s.yaml"), api=api)
    assert done.result.status == "complete"
    assert done.failures == [
        "s.yaml: 1 unused turn: model called 1 time but script has 2 turns\n"
        "  turns[1]: complete: 'never played'"
    ]


def test_declared_unused_turns_are_checked_by_expect_instead() -> None:
    allowed = replay(parse_script({**ONE_UNUSED, "expect": {"unused_turns": 1}}))
    assert allowed.failures == []
    wrong = replay(parse_script({**ONE_UNUSED, "expect": {"unused_turns": 0}}))
    assert wrong.failures == ["expect.unused_turns: wanted 0, got 1"]


@pytest.mark.parametrize("api", MODES, ids=lambda a: a or "direct")
def test_a_script_that_runs_out_fails_with_the_players_message(api: str | None) -> None:
    done = replay(parse_script(RUNS_OUT, source="s.yaml"), api=api)
    assert done.result.status == "provider_error"
    # Gemini's SDK retries a 500 whatever x-should-retry says: each extra call is reported.
    extra = 3 if api == "gemini" else 1
    assert done.player.calls == 1 + extra
    assert done.failures == [
        f"s.yaml: model called {n} times but script has 1 turn" for n in range(2, 2 + extra)
    ]


def test_a_streamed_replay_that_runs_out_fails_alike() -> None:
    done = replay(parse_script(RUNS_OUT, source="s.yaml"), stream=True)
    assert done.failures == ["s.yaml: model called 2 times but script has 1 turn"]


def test_a_call_to_an_unstubbed_tool_is_a_warning_not_a_failure() -> None:
    data = {"prompt": "list files", "turns": [{"tool_call": "Bash"}, {"text": "done"}]}
    done = replay(parse_script(data, source="s.yaml"))
    assert done.failures == []
    assert done.warnings == [
        "s.yaml: turns[0]: calls 'Bash', a tool the request did not offer (offered: no "
        "tools); served as scripted"
    ]
    (record,) = done.result.tool_calls
    assert (record.executed, record.result.is_error) == (False, True)  # the loop had no Bash


def test_a_replay_needs_a_prompt() -> None:
    with pytest.raises(ScriptError, match=r"^s\.yaml: prompt: missing; a replay needs"):
        replay(parse_script({"turns": [{"text": "x"}]}, source="s.yaml"))


# -- the command -------------------------------------------------------------------------------


def test_the_command_exits_1_on_unused_turns(tmp_path: Path) -> None:
    out = donegate("replay", str(script_file(tmp_path, ONE_UNUSED)), "--json")
    assert out.returncode == 1, out.stderr
    got = json.loads(out.stdout)
    assert (got["status"], got["unused_turns"]) == ("complete", 1)
    assert got["failures"][0].endswith(
        "1 unused turn: model called 1 time but script has 2 turns\n"
        "  turns[1]: complete: 'never played'"
    )


@pytest.mark.parametrize("api", [None, "anthropic-messages"], ids=lambda a: a or "direct")
def test_the_command_exits_1_when_the_script_runs_out(tmp_path: Path, api: str | None) -> None:
    path = script_file(tmp_path, RUNS_OUT)
    out = donegate("replay", str(path), *(["--api", api] if api else []))
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert f"FAIL {path}: model called 2 times but script has 1 turn" in out.stdout


def test_the_command_prints_warnings_on_stderr_and_still_passes(tmp_path: Path) -> None:
    data = {"prompt": "list files", "turns": [{"tool_call": "Bash"}, {"text": "done"}]}
    path = script_file(tmp_path, data)
    out = donegate("replay", str(path), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr == (
        f"donegate: warning: {path}: turns[0]: calls 'Bash', a tool the request did not offer "
        "(offered: no tools); served as scripted\n"
    )
    assert json.loads(out.stdout)["warnings"] == [out.stderr.removeprefix("donegate: warning: ")
                                                  .rstrip("\n")]  # fmt: skip


def test_the_command_exits_2_for_a_script_without_a_prompt(tmp_path: Path) -> None:
    out = donegate("replay", str(script_file(tmp_path, {"turns": [{"text": "x"}]})))
    assert out.returncode == 2
    assert out.stderr.strip().endswith("s.yaml: prompt: missing; a replay needs the user's "
                                       "prompt (only `donegate run` takes the task's)")  # fmt: skip
    assert len(out.stderr.strip().splitlines()) == 1
