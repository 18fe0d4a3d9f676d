"""Provider faults through the emulator: the official SDKs retry them, and no task is lost.

Every task's model is the real Anthropic or OpenAI SDK client pointed at an `Emulator` over
loopback (5 s timeout, 2 retries), and every task has its own conversation (chosen by the
``x-donegate-conversation`` header). Scripts put a 429 with ``retry-after``, a 500, an answer
held past the client's timeout and a dropped connection before ordinary turns: the SDK retries
each, the emulator's log shows every attempt, and every task ends as scripted. A fault that
outlasts the retries is a ``provider_error`` run: the worker puts the task back (and records it
failed once its attempts are spent), per docs/worker.md.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from donegate.models.base import Model
from donegate.models.sdk import AnthropicModel, OpenAIChatModel
from donegate.store.sql import SqlStore
from donegate.testing.emulator import CONVERSATION_HEADER, Emulator
from donegate.testing.script import parse_script
from donegate.worker import Worker, submit
from tests.worker.helpers import effect_counts, task

TIMEOUT_S = 5.0  # a loaded machine must not time out an answer the emulator did serve
MAX_RETRIES = 2

SEND = {"tool_call": "send", "args": {"to": "ann"}}
SENT = {"text": "Sent it."}
RATE_LIMITED = {"http_error": 429, "retry_after": 0.01, "message": "Too many requests"}
SERVER_ERROR = {"http_error": 500, "message": "Internal server error"}
HELD = {"delay": 60, "text": "An answer the client gave up on."}  # past the client's timeout
DROPPED = {"disconnect": True}

SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "rate-limited": [RATE_LIMITED, SEND, RATE_LIMITED, SENT],
    "server-error": [SERVER_ERROR, SEND, SENT],
    "timeout": [HELD, SEND, SENT],
    "dropped": [DROPPED, SEND, SENT],
    "all-four": [RATE_LIMITED, DROPPED, SEND, SERVER_ERROR, HELD, SENT],
    "escalated": [DROPPED, SEND, RATE_LIMITED, SENT],  # the task's check fails: escalated
    # Three failed attempts of one call: the SDK gives up, the run is a provider error.
    "outage": [DROPPED, SERVER_ERROR, DROPPED, SEND, SENT],
    "down": [SERVER_ERROR, DROPPED, SERVER_ERROR],  # and the task has one attempt only
}
"""Conversation name -> turns; each task runs one conversation."""


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    tools = {"send": {"returns": "sent", "side_effect": True}}
    with Emulator() as emu:
        for sdk in ("anthropic", "openai"):
            for name, turns in SCRIPTS.items():
                script = parse_script({"prompt": "p", "tools": tools, "turns": turns})
                emu.load(script, name=f"{sdk}-{name}")
        yield emu


def sdk_resolver(emu: Emulator) -> Any:
    """``anthropic:<conversation>`` or ``openai:<conversation>`` -> that SDK's client on `emu`."""

    def resolve(name: str, what: str) -> Model:
        sdk, _, conversation = name.partition(":")
        headers = {CONVERSATION_HEADER: f"{sdk}-{conversation}"}
        if sdk == "anthropic":
            client: Any = anthropic.Anthropic(
                api_key="test", base_url=emu.base_url, timeout=TIMEOUT_S,
                max_retries=MAX_RETRIES, default_headers=headers,
            )  # fmt: skip
            return AnthropicModel(client, "claude-sonnet-4-6")
        client = openai.OpenAI(
            api_key="test", base_url=emu.base_url + "/v1", timeout=TIMEOUT_S,
            max_retries=MAX_RETRIES, default_headers=headers,
        )  # fmt: skip
        return OpenAIChatModel(client, "gpt-4o-mini")

    return resolve


def attempts(emu: Emulator) -> dict[str, list[Any]]:
    """Per conversation, what each request got: an HTTP status, ``held``, or ``dropped``."""
    out: dict[str, list[Any]] = collections.defaultdict(list)
    for entry in emu.requests:
        fault = entry.get("fault") or {}
        got = "dropped" if fault.get("disconnect") else "held" if fault else entry["status"]
        out[entry["conversation"]].append(got)
    return dict(out)


def test_provider_faults_are_retried_and_no_task_is_lost(
    store: SqlStore, effect_log: Path, emulator: Emulator
) -> None:
    workdir = effect_log.parent
    ids: list[str] = []
    for sdk in ("anthropic", "openai"):
        for name in SCRIPTS:
            task_id = f"{sdk}-{name}"
            spec = task(task_id, workdir, model=f"{sdk}:{name}", escalate=name == "escalated")
            submit(spec, store, max_attempts=1 if name == "down" else 5)
            ids.append(task_id)
    worker = Worker(
        store,
        concurrency=len(ids),
        model_resolver=sdk_resolver(emulator),
        poll_s=0.05,
        error_backoff_s=0.0,
    )
    worker.run(until_idle=True)

    # None lost: every task ended as scripted, and the one whose provider stayed down is
    # recorded failed with the provider's reason, not dropped.
    statuses = {t.id: t.status for t in store.list_tasks()}
    expected = {
        name: "escalated" if name == "escalated" else "failed" if name == "down" else "done"
        for name in SCRIPTS
    }
    assert statuses == {f"{sdk}-{name}": s for sdk in ("anthropic", "openai")
                        for name, s in expected.items()}  # fmt: skip
    for sdk in ("anthropic", "openai"):
        down = store.get(f"{sdk}-down")
        assert down is not None and down.reason is not None
        assert down.reason.startswith("provider_error"), down.reason
        assert [r.status for r in store.runs(f"{sdk}-down")] == ["error"]
        # The outage outlasted one attempt's retries: the task went back and ran again.
        outage = store.get(f"{sdk}-outage")
        assert outage is not None and outage.attempts == 2
        assert [r.status for r in store.runs(f"{sdk}-outage")] == ["error", "done"]

    # Each fault was retried by the SDK: the emulator saw every attempt, per conversation.
    ok = 200
    per_script = {
        "rate-limited": [429, ok, 429, ok],
        "server-error": [500, ok, ok],
        "timeout": ["held", ok, ok],
        "dropped": ["dropped", ok, ok],
        "all-four": [429, "dropped", ok, 500, "held", ok],
        "escalated": ["dropped", ok, 429, ok],
        "outage": ["dropped", 500, "dropped", ok, ok],
        "down": [500, "dropped", 500],
    }
    assert attempts(emulator) == {
        f"{sdk}-{name}": got for sdk in ("anthropic", "openai") for name, got in per_script.items()
    }
    emulator.assert_exhausted()  # every scripted turn, faults included, was served once

    # Exactly one delivery per task that reached its tool call: nothing lost, nothing repeated.
    delivered, executed = effect_counts(effect_log)
    sent = {f"{sdk}-{name}:1:0": 1 for sdk in ("anthropic", "openai")
            for name in SCRIPTS if name != "down"}  # fmt: skip
    assert delivered == executed == sent
