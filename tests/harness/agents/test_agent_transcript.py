"""Transcripts are pointed to (path + SHA-256), never copied; read only under the CLI's own data
folder or the session's cwd, and only their tail."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from hookkit import Hook, payload, reports

from donegate.harness.agents.transcript import READ_CAP, jsonl_records, locate

SECRET = "hunter2-do-not-copy"


def todo_line(content: str, status: str) -> str:
    todos = [{"content": content, "status": status, "activeForm": content}]
    return json.dumps({"type": "user", "toolUseResult": {"newTodos": todos}, "x": SECRET}) + "\n"


def escalate_now(hook: Hook, homes: dict[str, Path], transcript: Path | str) -> dict[str, object]:
    """A stop that escalates at once (budget 0), so the report shows what the hook kept."""
    out = hook("claude", payload("claude", homes["work"], transcript_path=str(transcript)),
               max_continuations=0)  # fmt: skip
    assert out.action == "escalate"
    [report] = reports(homes["data"])
    return report


def test_a_transcript_outside_the_allowed_folders_is_not_read_nor_copied(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere" / "session.jsonl"
    elsewhere.parent.mkdir()
    elsewhere.write_text(todo_line("never seen", "pending"))
    (homes["work"] / "done.txt").write_text("x")
    out = hook("claude", payload("claude", homes["work"], transcript_path=str(elsewhere)))
    assert (out.action, out.todos) == ("pass", ())  # its open item was never read
    (homes["work"] / "done.txt").unlink()
    report = escalate_now(hook, homes, elsewhere)
    assert report["state"]["transcript"] == {
        "path": str(elsewhere),
        "resolved": None,
        "sha256": None,
        "bytes": None,
        "read": False,
        "note": "outside the CLI's data folder and the session's cwd: not read",
    }
    assert SECRET not in json.dumps(report)


@pytest.mark.parametrize("path", ["/etc/passwd", "/etc/shadow", "/dev/zero", "/proc/self/environ"])
def test_system_files_are_never_read(path: str, hook: Hook, homes: dict[str, Path]) -> None:
    report = escalate_now(hook, homes, path)
    pointer = report["state"]["transcript"]
    assert (pointer["read"], pointer["sha256"]) == (False, None)
    text = json.dumps(report)
    assert "root:" not in text and "PATH=" not in text


def test_a_link_in_the_cwd_to_a_file_outside_is_not_followed(
    hook: Hook, homes: dict[str, Path], tmp_path: Path
) -> None:
    outside = tmp_path / "secret.jsonl"
    outside.write_text(todo_line("x", "pending"))
    link = homes["work"] / "transcript.jsonl"
    link.symlink_to(outside)
    pointer = escalate_now(hook, homes, link)["state"]["transcript"]
    assert pointer["read"] is False


def test_a_transcript_under_the_cli_folder_is_digested_and_read(
    hook: Hook, homes: dict[str, Path]
) -> None:
    path = homes["claude"] / "projects" / "-work" / "s1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(todo_line("write b", "pending"))
    out = hook("claude", payload("claude", homes["work"], transcript_path=str(path)))
    assert [t.text for t in out.todos] == ["write b"]
    pointer = escalate_now(hook, homes, path)["state"]["transcript"]
    assert pointer["read"] is True
    assert pointer["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert pointer["bytes"] == path.stat().st_size


def test_the_cwd_root_or_home_never_opens_every_file(
    homes: dict[str, Path], tmp_path: Path
) -> None:
    from donegate.harness.agents.claude import CLAUDE
    from donegate.harness.agents.judge import transcript_roots as _transcript_roots

    assert Path("/") not in _transcript_roots(CLAUDE, Path("/"))
    assert Path.home().resolve() not in _transcript_roots(CLAUDE, Path.home().resolve())
    assert homes["work"] in _transcript_roots(CLAUDE, homes["work"])


def test_a_huge_transcript_is_read_by_its_tail_and_never_copied(
    hook: Hook, homes: dict[str, Path]
) -> None:
    path = homes["claude"] / "big.jsonl"
    with path.open("w") as handle:
        handle.write(todo_line("early item", "pending"))  # beyond the tail: not read
        filler = json.dumps({"type": "assistant", "pad": "y" * 1000}) + "\n"
        handle.write(filler * (READ_CAP // len(filler) + 4000))
        handle.write(todo_line("late item", "pending"))
    assert path.stat().st_size > READ_CAP + 2_000_000
    out = hook("claude", payload("claude", homes["work"], transcript_path=str(path)))
    assert [t.text for t in out.todos] == ["late item"]
    escalate_now(hook, homes, path)
    [report_file] = (homes["data"] / "escalations").glob("*.json")
    assert report_file.stat().st_size < 64 * 1024


def test_a_binary_transcript_is_digested_and_decided_on(hook: Hook, homes: dict[str, Path]) -> None:
    path = homes["claude"] / "binary.jsonl"
    path.write_bytes(os.urandom(200_000) + b"\n" + todo_line("x", "pending").encode()[:-3])
    out = hook("claude", payload("claude", homes["work"], transcript_path=str(path)))
    assert out.action == "block" and out.todos == ()
    pointer = escalate_now(hook, homes, path)["state"]["transcript"]
    assert pointer["read"] is True and len(pointer["sha256"]) == 64


def test_a_fifo_is_not_opened(homes: dict[str, Path]) -> None:
    fifo = homes["claude"] / "pipe.jsonl"
    os.mkfifo(fifo)
    ref = locate(str(fifo), [homes["claude"]])
    assert (ref.readable, ref.note) == (False, "not a regular file: not read")
    assert list(jsonl_records(ref)) == []
