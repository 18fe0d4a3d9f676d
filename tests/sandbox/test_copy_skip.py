"""The room never copies the gate's own data folder (nor itself) when it sits in the workdir."""

from __future__ import annotations

import os
from pathlib import Path

from donegate.harness.protect import take_manifest
from donegate.sandbox._copy import sync
from donegate.store.sql import open_store


def test_a_data_folder_inside_the_workdir_is_not_copied_and_the_room_not_copied_into_itself(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    state = work / "state"  # DONEGATE_HOME=$PWD/state, as docs/config.md shows
    (state / "rooms").mkdir(parents=True)
    (state / "signing.key").write_text("secret\n")
    (work / "hello.txt").write_text("hello\n")
    room = state / "rooms" / "r" / "tree"
    done = sync(work, room, index=state / "rooms" / "r" / "index.json", skip=(state,))
    assert sorted(p.name for p in room.iterdir()) == ["hello.txt"]
    assert done.entries == 1
    again = sync(work, room, index=state / "rooms" / "r" / "index.json", skip=(state,))
    assert (again.copied, again.entries) == (0, 1)


def test_a_store_this_process_opened_in_the_workdir_keeps_its_locks(tmp_path: Path) -> None:
    """Copying (or digesting) the gate's own SQLite store would close a descriptor of it and drop
    every POSIX lock SQLite holds: a reader beside it then resets the WAL index under the store.
    The room copy and the protected-file walk leave it out, and the store's locks stay held."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "hello.txt").write_text("hello\n")
    store = open_store(work / "q.db")  # registers itself with donegate.sandbox.own
    try:
        with store._db.read() as conn:  # a read holds SQLite's shared lock on the WAL index
            conn.exec_driver_sql("select count(*) from tasks").scalar()
            room = tmp_path / "room"
            sync(work, room, index=tmp_path / "index.json")
            manifest = take_manifest(work, ["**/*"])
            assert sorted(p.name for p in room.iterdir()) == ["hello.txt"]
            assert sorted(manifest.files) == ["hello.txt"]
            locks = Path("/proc/locks").read_text()
            shm = os.stat(work / "q.db-shm").st_ino
            assert f":{shm} " in locks  # still held by this process after the copy and the walk
    finally:
        store.close()
