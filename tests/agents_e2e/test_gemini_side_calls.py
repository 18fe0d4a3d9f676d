"""Gemini CLI on its default model, auto: every prompt is first routed by a side call.

The router asks ``generateContent`` (not streamed, no tools) for a JSON complexity score on the
same base URL as the agent's own turns. Served from the script, it would take the agent's turns
(measured: the session then hangs); the emulator's ``side_calls`` answers it with a stock reply
instead, so the same script as with ``-m`` plays out, and the gate works as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents_e2e._agents import FILES, GEMINI, Emulate, Mode, Session

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


@pytest.mark.parametrize("mode", ["exec", "install"])
def test_routing_side_calls_use_no_turn_and_the_gate_still_continues_to_done(
    mode: Mode, tmp_path: Path
) -> None:
    session = Session(GEMINI, tmp_path)
    session.gemini_model = None  # auto: the router decides, with a side call per prompt
    with Emulate(*session.scripts("continued"), side_calls=True) as emu:
        run = session.run(emu, mode, max_continuations=2)
        run.assert_exhausted(emu)
        side = [r for r in emu.requests if r.get("side_call")]

    assert side, "Gemini CLI made no side call: this test no longer tests what it says"
    assert all(":generateContent" in r["path"] and not r["body"].get("tools") for r in side)
    assert len(run.requests) == 4, run.explain()  # the agent's own turns, as with -m
    assert run.gate_messages() == [2], run.explain()
    assert sorted(p.name for p in session.work.iterdir() if p.is_file()) == sorted(FILES)
    assert run.code == 0, run.explain()
    if mode == "exec":
        assert run.summary is not None
        assert (run.summary["status"], run.summary["continuations"]) == ("done", 1)
