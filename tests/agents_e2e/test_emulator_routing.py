"""Conversations told apart by prompt, over real HTTP with the official SDK.

Claude Code's background subagents call the same base URL as the session that started them, in
an order no test controls: each request goes to the script whose prompt it carries.
"""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from donegate.testing import Emulator

SCRIPTS = Path(__file__).resolve().parent / "scripts"
MAIN = SCRIPTS / "two_prompts_main.yaml"
SUB = SCRIPTS / "two_prompts_sub.yaml"


def ask(emu: Emulator, *texts: str) -> str:
    """One Anthropic request whose user turns are `texts`; the text answered."""
    client = anthropic.Anthropic(base_url=emu.base_url, api_key="test", max_retries=0)
    messages: list[anthropic.types.MessageParam] = []
    for text in texts:
        if messages:
            messages.append({"role": "assistant", "content": "ok"})
        messages.append({"role": "user", "content": [{"type": "text", "text": text}]})
    reply = client.messages.create(model="m", max_tokens=100, messages=messages)
    return "".join(b.text for b in reply.content if b.type == "text")


def test_each_request_is_answered_by_the_script_whose_prompt_it_carries() -> None:
    with Emulator(MAIN, SUB) as emu:
        # The subagent asks first, though its script was loaded second.
        assert ask(emu, "SUBAGENT: write api/refunds.py") == "sub one"
        assert ask(emu, "<system-reminder>ctx</system-reminder>", "migrate the endpoints") == (
            "main one"
        )
        # A forked subagent carries the main prompt too: the latest prompt said decides.
        with pytest.raises(anthropic.InternalServerError, match="script has 1 turn"):
            ask(emu, "migrate the endpoints", "SUBAGENT: write api/refunds.py")
        assert ask(emu, "migrate the endpoints") == "main two"
        served = [(e["conversation"], e["turn"]) for e in emu.requests]
    assert served == [
        ("two_prompts_sub", 0),
        ("two_prompts_main", 0),
        ("two_prompts_sub", 1),
        ("two_prompts_main", 1),
    ]


def test_requests_naming_no_prompt_are_answered_in_order() -> None:
    with Emulator(MAIN, SUB) as emu:
        assert [ask(emu, "something else") for _ in range(3)] == ["main one", "main two", "sub one"]
