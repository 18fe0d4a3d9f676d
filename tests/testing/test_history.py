"""Request history: each body kept once, as bytes; each request parsed once; read back on demand.

An agent resends its whole conversation on every request, so these tests grow a conversation
and check that the emulator and the player hold its length, not its square, while everything a
test reads back (`Emulator.requests`, `ScriptedModel.requests` and `.bodies`) is what was sent.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from donegate.models.registry import wire_format
from donegate.testing import transcript_from
from donegate.testing._history import Spool, common_prefix
from donegate.testing.emulator import Emulator
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script

RESULT = 20 * 1024
TURNS = 40
PATH = "/v1/chat/completions"


def script(turns: int) -> Any:
    steps: list[dict[str, Any]] = [
        {"tool_call": "read_file", "args": {"path": f"f{i}"}, "id": f"c{i}"} for i in range(turns)
    ]
    data = {"prompt": "read", "tools": {"read_file": {"returns": ""}},
            "turns": [*steps, {"text": "done"}], "max_steps": turns + 2}  # fmt: skip
    return parse_script(data, source="growing")


def bodies(turns: int) -> Iterator[dict[str, Any]]:
    """A chat-completions conversation, each request adding a call and a 20 KB result."""
    tool = {"type": "function", "function": {"name": "read_file", "parameters": {}}}
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read"}]
    for i in range(turns + 1):
        yield {"model": "gpt-4o-mini", "messages": messages, "tools": [tool]}
        args = json.dumps({"path": f"f{i}"})
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": args},
        }
        result = f"{i:05d} " * (RESULT // 6)
        messages = [*messages, {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": f"c{i}", "content": result}]  # fmt: skip


def test_a_long_conversation_costs_the_emulator_its_length_not_its_square() -> None:
    emu = Emulator(script(TURNS))
    sent: list[bytes] = []
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for body in bodies(TURNS):
            data = json.dumps(body).encode()
            assert emu.handle("POST", PATH, body=data).status == 200
            sent.append(data)
            del data
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    total = sum(len(b) for b in sent)
    assert total > 16 * 2**20  # what keeping every body (once, as bytes) would have cost
    held -= sum(len(b) for b in sent)  # the test's own copies
    assert held < 4 * 2**20, f"the emulator holds {held / 2**20:.1f} MiB for {TURNS + 1} requests"
    emu.assert_exhausted()
    log = emu.requests
    assert [e["body"] for e in log] == [json.loads(b) for b in sent]
    assert [e["turn"] for e in log] == list(range(TURNS + 1))
    transcript = transcript_from(emu)
    assert len(transcript) == 2 * TURNS + 2 and transcript[-1].text == "done"


def test_the_player_reads_its_http_history_back_as_it_was_sent() -> None:
    player = ScriptedModel(script(TURNS))
    handle = player.handler("openai-chat")
    sent = list(bodies(TURNS))
    for body in sent:
        response = handle(httpx2.Request("POST", "http://t" + PATH, json=body))
        assert response.status_code == 200
    player.assert_exhausted()
    assert list(player.bodies) == sent
    assert player.bodies[-1] == sent[-1] and len(player.bodies) == TURNS + 1
    wire = wire_format("openai-chat")
    assert player.requests == [wire.parse_request(b) for b in sent]
    assert player.requests[3].messages[-1].results[0].call_id == "c2"
    assert player.requests[-2:] == [wire.parse_request(b) for b in sent[-2:]]
    assert player.requests != sent  # a body is not the request it was read as
    with pytest.raises(IndexError):
        player.requests[TURNS + 1]


def test_each_request_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    emu = Emulator(script(1), script(1), side_calls=True)  # routing by prompt and side calls
    wire = wire_format("openai-chat")
    counts = {"json": 0, "wire": 0}
    loads, parse = json.loads, wire.parse_request

    def counted_loads(text: Any, **kwargs: Any) -> Any:
        counts["json"] += isinstance(text, bytes)  # a body (tool arguments are str)
        return loads(text, **kwargs)

    def counted_parse(body: Any) -> Any:
        counts["wire"] += 1
        return parse(body)

    monkeypatch.setattr(json, "loads", counted_loads)
    monkeypatch.setattr(wire, "parse_request", counted_parse)
    for body in bodies(1):
        assert emu.handle("POST", PATH, body=json.dumps(body).encode()).status == 200
    assert counts == {"json": 2, "wire": 2}
    assert [e["conversation"] for e in emu.requests] == ["growing", "growing"]


def test_a_body_that_is_not_json_is_logged_as_its_text() -> None:
    emu = Emulator(script(1))
    assert emu.handle("POST", PATH, body=b"{not json").status == 400
    [entry] = emu.requests
    assert (entry["body"], entry["status"]) == ("{not json", 400)


def naive_prefix(a: bytes, b: bytes) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@given(st.binary(max_size=300), st.binary(max_size=300), st.integers(0, 300))
def test_common_prefix_is_the_longest_shared_start(a: bytes, tail: bytes, cut: int) -> None:
    b = a[:cut] + tail
    assert common_prefix(a, b) == naive_prefix(a, b)


def test_common_prefix_across_chunks() -> None:
    a = bytes(range(256)) * 1000
    for cut in (0, 1, 65535, 65536, 65537, 200_000, len(a)):
        b = a[:cut] + b"\xff\xfe"
        assert common_prefix(a, b) == naive_prefix(a, b)


# each step: keep the last string and add to it, cut it and add, or start afresh; on a lane
steps = st.lists(
    st.tuples(st.sampled_from(["grow", "cut", "new"]), st.sampled_from(["a", "b", None]),
              st.binary(max_size=3000), st.floats(0, 1)),
    max_size=40,
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(steps)
def test_a_spool_gives_back_every_string_it_was_given(
    plan: list[tuple[str, str | None, bytes, float]],
) -> None:
    spool = Spool(memory=4096)  # past 4 KB it lives in a file
    kept: list[bytes] = []
    current = b""
    for change, lane, more, where in plan:
        if change == "grow":
            current += more
        elif change == "cut":
            current = current[: int(len(current) * where)] + more
        else:
            current = more
        assert spool.append(current, lane=lane) == len(kept)
        kept.append(current)
    assert len(spool) == len(kept)
    assert [spool[i] for i in range(len(kept))] == kept
    spool.close()


def test_a_growing_lane_is_kept_as_its_differences() -> None:
    spool = Spool(memory=1024)
    strings = [b"x" * 2048 + b"".join(b"%06d" % i for i in range(n)) for n in range(200)]
    for s in strings:
        spool.append(s, lane="chat")
    assert spool[199] == strings[199] and spool[0] == strings[0]
    stored = spool._ends[-1]  # the bytes written: the first string, then each one's new end
    assert stored == len(strings[0]) + 6 * 199
