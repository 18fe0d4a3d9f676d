"""Store faults under a running ``donegate worker --until-idle``: none ends with exit 0 while
work is pending or lost, each fault is one line on stderr, and every task ends done or back in
the queue (a second worker then finishes them all, each message delivered once).

- the SQLite file deleted, or replaced by a restored copy, while the worker runs;
- PostgreSQL stopped and restarted mid-run (its own throwaway cluster, not the shared one),
  within the worker's ``--store-patience`` and past it;
- a full disk: a small tmpfs filled while the worker runs (when this machine lets a test mount
  one), and a file-size limit (``RLIMIT_FSIZE``) on the worker process.
"""

from __future__ import annotations

import contextlib
import os
import resource
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from donegate.store.sql import SqlStore, open_store
from donegate.worker import submit
from tests.store.conftest import pg_schema_url
from tests.store.pgcluster import Cluster, available, cluster
from tests.worker.chaos import python_worker, worker_env
from tests.worker.helpers import effect_counts, task

pytestmark = pytest.mark.slow

TASKS = 40


def submit_batch(db: str | Path, workdir: Path, n: int = TASKS) -> None:
    store = open_store(db)
    for i in range(n):
        submit(task(f"t{i:02}", workdir), store)
    store.close()


def start(
    db: str | Path, work: Path, *args: str, delay: float = 0.03, **popen: object
) -> subprocess.Popen[str]:
    """A worker process on `db`, until idle, its effects a little slow (`delay` seconds each,
    so that the batch is still running when the fault comes)."""
    env = worker_env(work, work / "effects.log", DONEGATE_TEST_EFFECT_DELAY=str(delay))
    if "home" in popen:
        env["DONEGATE_HOME"] = str(popen.pop("home"))
    command = python_worker("--db", str(db), "--until-idle", "--lease", "2", *args)
    return subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **popen
    )  # type: ignore[call-overload]


def ended(proc: subprocess.Popen[str], timeout: float = 90) -> tuple[int, list[str]]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err.splitlines()


def one_fault_line(lines: list[str], *fragments: str) -> str:
    """The worker's stderr: its start line, then one line saying why it stopped; no traceback."""
    assert not any("Traceback" in line for line in lines), "\n".join(lines)
    lines = [line for line in lines if " INFO donegate.worker: task " not in line]  # task events
    assert len(lines) == 2 and lines[0].startswith("worker "), "\n".join(lines)
    last = lines[1]
    assert last.startswith("donegate: worker ") and " stopped: " in last, last
    for fragment in fragments:
        assert fragment in last, last
    return last


def sqlite_done(db: Path) -> int:
    """Tasks done so far, read beside the worker (0 while the file cannot be read)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            row = conn.execute("select count(*) from tasks where status='done'").fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0])


def wait_for(done: Callable[[], int], n: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while done() < n:
        if proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(
                f"the worker ended before the fault (exit {proc.returncode}):\n{err}"
            )
        assert time.monotonic() < deadline, "the worker made no progress"
        time.sleep(0.05)


def in_queue_or_done(store: SqlStore, *, allow_running: bool = False) -> dict[str, int]:
    """Every task is done or pending (or, where the worker could not write, running under a
    lease that runs out); none is lost, failed or escalated."""
    counts = store.counts()
    allowed = {"done", "pending"} | ({"running"} if allow_running else set())
    assert set(counts) <= allowed and sum(counts.values()) == TASKS, counts
    return counts


def finish_all(db: str | Path, work: Path, **popen: object) -> None:
    """A second worker finishes every task; each message is delivered exactly once."""
    code, lines = ended(start(db, work, **popen))
    assert code == 0, lines
    assert not any("Traceback" in line for line in lines), lines
    store = open_store(db)
    assert store.counts() == {"done": TASKS}
    store.close()
    delivered, _ = effect_counts(work / "effects.log")
    assert delivered == {f"t{i:02}:1:0": 1 for i in range(TASKS)}


def _copy(src: Path, dst: Path) -> None:
    source, target = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()


# -- SQLite: the file deleted or replaced -------------------------------------------------------


def test_a_deleted_sqlite_file_ends_the_worker_non_zero(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    submit_batch(db, tmp_path)
    proc = start(db, tmp_path)
    wait_for(lambda: sqlite_done(db), 5, proc)
    os.unlink(db)
    code, lines = ended(proc)
    assert code == 1
    one_fault_line(lines, f"the store file {db} was deleted under this process")
    assert not db.exists()  # it did not go on in a fresh empty store


def test_a_replaced_sqlite_file_ends_the_worker_and_the_restored_store_is_finished(
    tmp_path: Path,
) -> None:
    db = tmp_path / "q.db"
    submit_batch(db, tmp_path)
    proc = start(db, tmp_path)
    wait_for(lambda: sqlite_done(db), 5, proc)
    _copy(db, tmp_path / "restored.db")
    os.replace(tmp_path / "restored.db", db)
    code, lines = ended(proc)
    assert code == 1
    one_fault_line(lines, f"the store file {db} was replaced under this process")
    store = open_store(db)
    counts = in_queue_or_done(store, allow_running=True)  # as of the copy: some were running
    store.close()
    assert counts.get("done", 0) >= 5
    time.sleep(2.1)  # the stopped worker's leases in the copy run out
    finish_all(db, tmp_path)


# -- PostgreSQL: stopped and restarted --------------------------------------------------------


@pytest.fixture(scope="module")
def pg() -> Iterator[Cluster]:
    """A PostgreSQL cluster of this module's own, on a free port."""
    why = available()
    if why is not None:
        pytest.skip(why)
    with cluster() as c:
        yield c


@pytest.fixture
def pg_url(pg: Cluster) -> Iterator[str]:
    """A fresh schema on the module's cluster (the cluster is started again if a test left it
    stopped)."""
    yield from pg_schema_url(pg.url)


@contextlib.contextmanager
def pg_done(url: str) -> Iterator[Callable[[], int]]:
    """Counts done tasks through a store of the test's own, closed before the server stops."""
    store = open_store(url)
    try:
        yield lambda: store.counts().get("done", 0)
    finally:
        store.close()


def test_postgres_stopped_and_restarted_mid_run_is_waited_out(
    tmp_path: Path, pg: Cluster, pg_url: str
) -> None:
    submit_batch(pg_url, tmp_path)
    proc = start(pg_url, tmp_path, "--concurrency", "2", "--store-patience", "60", delay=0.1)
    with pg_done(pg_url) as done:
        wait_for(done, 5, proc)
    pg.stop("immediate")  # as if it crashed: connections drop mid-transaction
    try:
        time.sleep(3)
        assert proc.poll() is None, "the worker gave up within its patience"
    finally:
        pg.start()
    code, lines = ended(proc)
    assert code == 0, lines
    assert not any("Traceback" in line for line in lines), "\n".join(lines)
    assert any("retrying for up to 60 s" in line for line in lines)  # it said it waited
    store = open_store(pg_url)
    assert store.counts() == {"done": TASKS}  # it did not exit while any was pending
    store.close()
    delivered, _ = effect_counts(tmp_path / "effects.log")
    assert delivered == {f"t{i:02}:1:0": 1 for i in range(TASKS)}


def test_postgres_down_past_the_patience_ends_the_worker_non_zero(
    tmp_path: Path, pg: Cluster, pg_url: str
) -> None:
    submit_batch(pg_url, tmp_path)
    proc = start(pg_url, tmp_path, "--concurrency", "2", "--store-patience", "1", delay=0.1)
    with pg_done(pg_url) as done:
        wait_for(done, 5, proc)
    pg.stop("immediate")
    try:
        code, lines = ended(proc, timeout=30)
    finally:
        pg.start()
    assert code == 1
    fault = [line for line in lines if line.startswith("donegate: ")]
    assert len(fault) == 1 and "(still, after 1 s)" in fault[0], lines
    assert not any("Traceback" in line for line in lines), "\n".join(lines)
    store = open_store(pg_url)
    in_queue_or_done(store, allow_running=True)  # the ones in hand wait for their leases
    store.close()
    time.sleep(2.1)
    finish_all(pg_url, tmp_path)


# -- a full disk ------------------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[None]:
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here; the RLIMIT_FSIZE case stands in for it")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path) -> Path:
    """Write a file until the disk has no room left."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 65536)
    finally:
        os.close(fd)
    return filler


def check_put_back(db: Path, last: str) -> None:
    store = open_store(db)
    in_queue_or_done(store)  # nothing left running: every task it held went back
    held = [t for t in store.list_tasks(status="pending", limit=TASKS) if t.reason]
    store.close()
    assert held and all(t.reason and t.reason.startswith("put back: ") for t in held)
    assert f"; {len(held)} put back" in last and "held until" not in last


def test_a_disk_that_fills_ends_the_worker_non_zero_and_puts_its_tasks_back(
    tmp_path: Path,
) -> None:
    disk = tmp_path / "disk"
    with tmpfs(disk, "16m"):
        db = disk / "q.db"
        submit_batch(db, tmp_path)
        proc = start(db, tmp_path, "--concurrency", "2", home=disk / "home")
        wait_for(lambda: sqlite_done(db), 8, proc)
        filler = fill(disk)  # another program takes the rest of the disk
        code, lines = ended(proc)
        assert code == 1
        # the store and the data directory share the disk (as ~/.donegate does): the first
        # write to meet it full is the one named, the store's or one in the data directory
        # (a certificate, or the clean room's copy of the workdir)
        store_full = f"the store sqlite:///{db} is full"
        home_full = f"stopped: disk full: {disk / 'home'}/"
        named = store_full if any(store_full in line for line in lines) else home_full
        last = one_fault_line(lines, named)
        filler.unlink()
        check_put_back(db, last)
        finish_all(db, tmp_path, home=disk / "home")


def test_a_file_size_limit_ends_the_worker_non_zero_and_puts_its_tasks_back(
    tmp_path: Path,
) -> None:
    db = tmp_path / "q.db"
    submit_batch(db, tmp_path)
    limit = db.stat().st_size + 192 * 1024

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = start(db, tmp_path, "--concurrency", "2", preexec_fn=limited)
    code, lines = ended(proc)
    assert code == 1
    last = one_fault_line(lines, f"the store sqlite:///{db} cannot write", "file-size limit")
    check_put_back(db, last)
    finish_all(db, tmp_path)
