"""The lock file SQLite writers share (`store/_writelock.py`): held by every write, waited on
by the next writer, never a way to hang one."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

from donegate.store import _writelock
from donegate.store._writelock import WriteLock
from donegate.store.sql import SqlStore, open_store


@contextmanager
def held_elsewhere(path: str) -> Iterator[int]:
    """The lock file held through its own open file: as another process would hold it."""
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield fd
    finally:
        os.close(fd)


def free(path: str) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def sqlite_store(tmp_path: Path) -> tuple[SqlStore, str]:
    db = tmp_path / "tasks.db"
    return open_store(f"sqlite:///{db}"), f"{db}.lock"


def write_once(store: SqlStore) -> None:
    with store._db.write() as conn:
        conn.execute(sa.text("SELECT 1"))


def test_a_write_holds_the_lock_file_and_lets_it_go(tmp_path: Path) -> None:
    store, lock = sqlite_store(tmp_path)
    assert Path(lock).is_file()
    seen: list[bool] = []
    with store._db.write() as conn:
        conn.execute(sa.text("SELECT 1"))
        seen.append(free(lock))
    seen.append(free(lock))
    assert seen == [False, True]


def test_a_writer_waits_for_the_lock_file_then_writes(tmp_path: Path) -> None:
    store, lock = sqlite_store(tmp_path)
    done = threading.Event()

    def writer() -> None:
        write_once(store)
        done.set()

    with held_elsewhere(lock):
        thread = threading.Thread(target=writer)
        thread.start()
        assert not done.wait(0.3)  # SQLite's own lock is free: only the lock file holds it
    assert done.wait(10)
    thread.join()


def test_a_lock_held_too_long_is_waited_on_no_longer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stuck or hostile holder (the agent can reach a file) costs a wait, not a hang: the
    write goes on under SQLite's own lock."""
    monkeypatch.setattr(_writelock, "WAIT_S", 0.2)
    store, lock = sqlite_store(tmp_path)
    wrote = threading.Event()

    def writer() -> None:
        write_once(store)
        wrote.set()

    with held_elsewhere(lock):
        thread = threading.Thread(target=writer)
        thread.start()
        assert wrote.wait(10)  # while the lock file is still held
        thread.join()
        assert store._db._file_lock is not None and store._db._file_lock._fd is None
        monkeypatch.setattr(_writelock, "WAIT_S", 60.0)
        wrote.clear()
        again = threading.Thread(target=writer)
        again.start()
        assert wrote.wait(10)  # the lock file is no longer waited on
        again.join()


def test_two_stores_of_one_file_in_one_thread_do_not_wait_on_themselves(tmp_path: Path) -> None:
    path = str(tmp_path / "tasks.db")
    first, second = WriteLock(path), WriteLock(path)
    entered = threading.Event()

    def nested() -> None:
        with first.held(), second.held():
            entered.set()

    thread = threading.Thread(target=nested)
    thread.start()
    thread.join(10)
    assert entered.is_set() and not thread.is_alive()
    assert free(path + ".lock")
    first.close()
    second.close()


def test_a_lock_file_that_cannot_be_made_leaves_sqlite_alone_in_charge(tmp_path: Path) -> None:
    db = tmp_path / "tasks.db"
    Path(f"{db}.lock").mkdir()  # a directory where the lock file would be
    store = open_store(f"sqlite:///{db}")
    write_once(store)
    with store._db.write() as conn:
        assert conn.execute(sa.text("SELECT 2")).scalar() == 2


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_what_an_agent_puts_at_the_lock_path_neither_hangs_nor_is_followed(
    tmp_path: Path, kind: str
) -> None:
    db = tmp_path / "tasks.db"
    lock = Path(f"{db}.lock")
    target = tmp_path / "elsewhere"
    if kind == "fifo":
        os.mkfifo(lock)  # opening it for reading would wait for a writer
    else:
        lock.symlink_to(target)
    opened = threading.Event()

    def open_and_write() -> None:
        write_once(open_store(f"sqlite:///{db}"))
        opened.set()

    thread = threading.Thread(target=open_and_write, daemon=True)
    thread.start()
    assert opened.wait(10)
    assert not target.exists()


def test_a_disposed_store_closes_its_lock_file(tmp_path: Path) -> None:
    store, lock = sqlite_store(tmp_path)
    file_lock = store._db._file_lock
    assert file_lock is not None and file_lock._fd is not None
    store._db.dispose()
    assert file_lock._fd is None and store._db._file_lock is None
    write_once(store)  # still usable: SQLite's own lock alone
    assert free(lock)
