"""Hook state edited by anyone but the hook is tampering: the stop stays blocked, every edit
counts, and once the budget is spent the stop is let through with an escalation report."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload, reports

from donegate.harness.agents.state import HookState, Round, StateStore, TamperedState

STATE = ("hooks", "ship", "s1.json")


def edit(field: str, value: Any) -> Callable[[Path], None]:
    """Set one field of the state to `value`, keeping the record's shape."""

    def apply(path: Path) -> None:
        record = json.loads(path.read_text())
        record["state"][field] = value
        path.write_text(json.dumps(record))

    return apply


def resign(field: str, value: Any) -> Callable[[Path], None]:
    """Set a field and sign the record again with the key (someone who could read the key)."""

    def apply(path: Path) -> None:
        store = StateStore(path.parents[1])
        record = json.loads(path.read_text())
        record["state"][field] = value
        record["mac"] = store._mac(record["state"])
        path.write_text(json.dumps(record))

    return apply


def replace_with(raw: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(raw)


def without_mac(path: Path) -> None:
    path.write_text(json.dumps({"state": json.loads(path.read_text())["state"]}))


def a_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


EDITS: dict[str, Callable[[Path], None]] = {
    # every type a JSON value can have, in the count
    **{f"blocks={v!r}": edit("blocks", v) for v in ["x", -1, 0, 999, None, [], {}, 1.5, True, ""]},
    # and in the other fields
    **{f"rounds={v!r}": edit("rounds", v) for v in ["x", None, [], [{}], [1], {}]},
    **{f"escalated={v!r}": edit("escalated", v) for v in [3, [], "/tmp/x.json", True]},
    **{f"session_id={v!r}": edit("session_id", v) for v in [None, 7, "other"]},
    **{f"kind={v!r}": edit("kind", v) for v in ["donegate.other", None]},
    "version=2": edit("version", 2),
    "extra key": edit("surprise", 1),
    "protected={}": edit("protected", {"files": {}}),
    "mac removed": without_mac,
    "mac edited": lambda p: p.write_text(
        json.dumps({**json.loads(p.read_text()), "mac": "hmac-sha256:" + "0" * 64})
    ),
    # values a key-holder could sign still fail the record's own consistency checks
    "re-signed blocks=0": resign("blocks", 0),
    "re-signed blocks=-3": resign("blocks", -3),
    "re-signed blocks='1'": resign("blocks", "1"),
    # whole-file damage
    "empty file": replace_with(b""),
    "null": replace_with(b"null"),
    "a list": replace_with(b"[]"),
    "a string": replace_with(b'"blocks"'),
    "truncated": replace_with(b'{"state": {"blocks": 1'),
    "binary": replace_with(bytes(range(256)) * 4),
    "not utf-8": replace_with(b'{"state": "\xff\xfe"}'),
    "huge": replace_with(b" " * (8 * 1024 * 1024 + 10)),
    "a directory": a_directory,
}


@pytest.mark.parametrize("tamper", list(EDITS.values()), ids=list(EDITS))
def test_tampered_state_blocks_until_the_budget_is_spent_then_escalates(
    tamper: Callable[[Path], None], hook: Hook, homes: dict[str, Path]
) -> None:
    work, data = homes["work"], homes["data"]
    state = data.joinpath(*STATE)
    first = hook("claude", payload("claude", work))
    assert (first.action, first.blocks) == ("block", 1)
    actions = []
    for _ in range(6):  # the agent edits the state again before every stop
        if state.is_file():
            tamper(state)
        out = hook("claude", payload("claude", work, stop_hook_active=True))
        actions.append(out.action)
        if out.action != "block":
            break
        assert out.output is not None
        assert "hook state" in out.output["reason"]
        assert "treated as tampering" in out.output["reason"]
    # budget 2: tampering never buys more than one extra block, and it ends escalated
    assert actions in (["block", "block", "escalate"], ["block", "escalate"])
    [report] = reports(data)
    assert any("treated as tampering" in e for e in report["state"]["errors"])
    assert report["continuations"] >= 2
    quarantined = sorted(state.parent.glob("s1.tampered-*.json"))
    assert quarantined, "the tampered records are kept for review"


def test_one_edit_costs_a_block_and_the_count_goes_on(hook: Hook, homes: dict[str, Path]) -> None:
    work, data = homes["work"], homes["data"]
    assert hook("codex", payload("codex", work)).blocks == 1
    edit("blocks", 0)(data.joinpath(*STATE))
    tampered = hook("codex", payload("codex", work))
    assert (tampered.action, tampered.blocks) == ("block", 1)
    assert tampered.error is not None and "does not match its signature" in tampered.error
    assert hook("codex", payload("codex", work)).blocks == 2
    assert hook("codex", payload("codex", work)).action == "escalate"


def test_a_deleted_state_key_makes_every_record_tampered(
    hook: Hook, homes: dict[str, Path]
) -> None:
    work, data = homes["work"], homes["data"]
    hook("gemini", payload("gemini", work))
    (data / "hooks" / "state.key").unlink()
    out = hook("gemini", payload("gemini", work))
    assert out.action == "block" and out.error is not None
    assert "does not match its signature" in out.error


def test_the_model_rejects_inconsistent_counts() -> None:
    blocked = Round(at=1.0, event="Stop", outcome="blocked")
    passed = Round(at=2.0, event="Stop", outcome="passed")
    fields = {"agent": "claude", "task": "t", "task_path": "/t.yaml", "session_id": "s"}
    HookState(**fields, blocks=1, rounds=[passed, blocked])
    for blocks, rounds in [(0, [blocked]), (2, [blocked, passed, blocked]), (1, [])]:
        with pytest.raises(ValueError, match="blocks is"):
            HookState(**fields, blocks=blocks, rounds=rounds)


def test_store_round_trip_and_quarantine(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "hooks")
    path = store.path_for("../../etc", "../s", "a/b")
    assert path.parent.parent == store.root  # ids from payloads never make a path
    state = HookState(agent="codex", task="t", task_path="/t.yaml", session_id="s")
    store.save(path, state.with_round(Round(at=1.0, event="Stop", outcome="blocked")))
    loaded = store.load(path)
    assert loaded is not None and loaded.blocks == 1
    assert oct(os.stat(store.root / "state.key").st_mode & 0o777) == "0o600"
    path.write_text("{}")
    with pytest.raises(TamperedState) as caught:
        store.load(path)
    assert caught.value.quarantined == path.with_name(f"{path.stem}.tampered-1.json")
    assert not path.exists() and store.tampered_count(path) == 1


def test_a_long_session_keeps_a_bounded_record() -> None:
    from donegate.harness.agents.state import MAX_ROUNDS

    state = HookState(agent="claude", task="t", task_path="/t.yaml", session_id="s")
    state = state.with_round(Round(at=0.0, event="Stop", outcome="blocked"))
    for n in range(MAX_ROUNDS + 50):  # background work keeps deferring the stop
        state = state.with_round(Round(at=float(n), event="Stop", outcome="deferred"))
    state = state.with_round(Round(at=1e9, event="Stop", outcome="blocked"))
    assert len(state.rounds) == MAX_ROUNDS
    assert state.blocks == 2 and [r.outcome for r in state.rounds].count("blocked") == 2
    assert state.rounds[-1].at == 1e9
