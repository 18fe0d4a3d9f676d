"""Hook mode without exec: what a session is judged by is pinned at its first event and never
taken again at a stop. A task file edited mid-session blocks; a state record deleted or forged
for a session the gate's signed index knows is tampering: it blocks, counts, and escalates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hookkit import Hook, payload, reports, write_task

from donegate.harness.agents import state
from donegate.harness.agents.state import StateStore, TamperedState

STATE = ("hooks", "ship", "s1.json")


def test_a_task_file_edited_mid_session_blocks_naming_it(
    hook: Hook, homes: dict[str, Path], task: Path
) -> None:
    work = homes["work"]
    first = hook("claude", payload("claude", work))  # done.txt missing: blocked, task pinned
    assert first.action == "block"
    (work / "done.txt").write_text("x")
    write_task(task, checks=[])  # the agent swaps the checks for none
    task.write_text(yaml.safe_dump({**yaml.safe_load(task.read_text()), "closure": "model"}))
    out = hook("claude", payload("claude", work, stop_hook_active=True))
    assert out.action == "block" and out.certificate is None
    assert out.output is not None and f"the task file {task}" in out.output["reason"]
    assert "changed since the session's first event" in out.output["reason"]


def test_a_deleted_state_record_of_a_known_session_blocks_and_escalates(
    hook: Hook, homes: dict[str, Path]
) -> None:
    work, data = homes["work"], homes["data"]
    assert hook("codex", payload("codex", work)).blocks == 1
    actions = []
    for _ in range(4):  # the agent deletes the record before every stop
        data.joinpath(*STATE).unlink(missing_ok=True)
        (work / "done.txt").write_text("x")  # and the work now passes: still no pass
        out = hook("codex", payload("codex", work))
        actions.append(out.action)
        assert out.certificate is None
        if out.action != "block":
            break
        assert out.error is not None and "signed index of sessions" in out.error
    assert actions[-1] == "escalate" and set(actions[:-1]) <= {"block"}
    [report] = reports(data)
    assert any("treated as tampering" in e for e in report["state"]["errors"])


def test_a_forged_index_blocks(hook: Hook, homes: dict[str, Path]) -> None:
    work, data = homes["work"], homes["data"]
    hook("claude", payload("claude", work))
    index = data / "hooks" / "sessions.index"
    entry = json.loads(index.read_text().splitlines()[0])
    entry["record"] = "ship/other.json"  # claims a session the gate never saw, unsigned anew
    index.write_text(json.dumps(entry) + "\n")
    data.joinpath(*STATE).unlink()
    (work / "done.txt").write_text("x")
    out = hook("claude", payload("claude", work))
    assert out.action == "block" and out.error is not None
    assert "does not verify" in out.error


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every signature the index checks from now on (one entry each)."""
    checked: list[object] = []
    real = state.signature_problem

    def counted(entry: Any, **kw: Any) -> str | None:
        checked.append(entry)
        return real(entry, **kw)

    monkeypatch.setattr(state, "signature_problem", counted)
    return checked


def test_a_new_sessions_stop_checks_each_index_line_once(
    hook: Hook, homes: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    work = homes["work"]
    for session in ("s1", "s2", "s3"):
        hook("claude", payload("claude", work, session=session))
    index = homes["data"] / "hooks" / "sessions.index"
    before = len(index.read_text().splitlines())
    checked = _counting(monkeypatch)
    out = hook("claude", payload("claude", work, session="s4"))  # read at load, and at save
    assert out.action == "block" and before == 3
    assert len(checked) == before
    assert len(index.read_text().splitlines()) == before + 1


def test_an_index_changed_between_two_reads_is_checked_again(
    hook: Hook, homes: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    hook("claude", payload("claude", homes["work"]))
    store = StateStore(homes["data"] / "hooks")
    record = store.path_for("ship", "s1")
    checked = _counting(monkeypatch)
    assert store.known(record) and store.known(record) and len(checked) == 1
    entry = json.loads(store.index_path.read_text().splitlines()[0])
    entry["record"] = "ship/other.json"  # a forged line, appended between the two reads
    with store.index_path.open("a") as handle:
        handle.write(json.dumps(entry) + "\n")
    with pytest.raises(TamperedState, match="line 2 does not verify"):
        store.known(record)
