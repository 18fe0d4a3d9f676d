"""Claim latency with few and with many backed-off tasks (pending, `not_before` in the future).

After a provider outage thousands of tasks wait out a backoff; a claim must find the oldest task
runnable now without reading them. Two stores are filled alike except for the number of
backed-off tasks (100 and 50,000, all older than the ready ones, so a scan in submission order
would meet every one first), then claimed from in turns, one claim each, so that load on the
machine falls on both alike.

    .venv/bin/python bench/claim.py                     # SQLite
    .venv/bin/python bench/claim.py --postgres URL      # and PostgreSQL (a schema of its own)

Printed: the median and p95 ms per claim for each store, and the ratio many/few against the
target (<= 2x).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sqlalchemy as sa  # noqa: E402 - after the path set-up above

from donegate.store import open_store  # noqa: E402
from donegate.store._schema import tasks  # noqa: E402
from donegate.store.sql import SqlStore  # noqa: E402

TARGET = 2.0


def fill(store: SqlStore, backed_off: int, ready: int) -> None:
    """`backed_off` tasks waiting an hour, then `ready` tasks runnable now (newer)."""
    now = time.time()

    def row(task_id: str, created: float, not_before: float | None) -> dict[str, object]:
        return {
            "id": task_id,
            "status": "pending",
            "spec": f'{{"id": "{task_id}", "prompt": "p"}}',
            "not_before": not_before,
            "created_at": created,
            "updated_at": now,
        }

    rows = [row(f"b{i:06}", now - 100_000 + i * 0.001, now + 3600) for i in range(backed_off)]
    rows += [row(f"r{i:06}", now - 10 + i * 0.001, None) for i in range(ready)]
    with store._db.write() as conn:
        for start in range(0, len(rows), 5000):
            conn.execute(sa.insert(tasks), rows[start : start + 5000])
    if not store._db.is_sqlite:
        with store._db.write() as conn:
            conn.execute(sa.text("ANALYZE tasks"))


def measure(stores: dict[int, SqlStore], claims: int) -> dict[int, list[float]]:
    """ms per claim for each store, claimed from in turns."""
    times: dict[int, list[float]] = {n: [] for n in stores}
    for _ in range(claims):
        for n, store in stores.items():
            started = time.perf_counter()
            lease = store.claim("bench", 60)
            times[n].append((time.perf_counter() - started) * 1000)
            assert lease is not None and lease.task_id.startswith("r"), lease
    return times


def report(name: str, times: dict[int, list[float]]) -> None:
    few, many = sorted(times)
    medians = {n: statistics.median(t) for n, t in times.items()}
    for n, t in times.items():
        p95 = statistics.quantiles(t, n=20)[-1]
        print(f"{name}: {n:>6} backed-off tasks: median {medians[n]:.3f} ms, p95 {p95:.3f} ms")
    ratio = medians[many] / medians[few]
    verdict = "ok" if ratio <= TARGET else "OVER"
    print(f"{name}: {many} vs {few} backed-off: {ratio:.2f}x (target <= {TARGET:g}x) {verdict}")


@contextmanager
def pg_schema(base: str) -> Iterator[str]:
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(base)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options=-csearch_path%3D{schema}"
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


def run(name: str, url_for: Callable[[int], str], counts: list[int], claims: int) -> None:
    with ExitStack() as stack:
        stores: dict[int, SqlStore] = {}
        for n in counts:
            store = open_store(url_for(n))
            stack.callback(store.close)
            fill(store, n, claims + 30)
            stores[n] = store
        measure(stores, 20)  # warm caches and connections
        report(name, measure(stores, claims))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--few", type=int, default=100)
    parser.add_argument("--many", type=int, default=50_000)
    parser.add_argument("--claims", type=int, default=500)
    parser.add_argument("--postgres", default=os.environ.get("DONEGATE_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    counts = [args.few, args.many]
    with tempfile.TemporaryDirectory() as tmp:
        run("SQLite", lambda n: f"sqlite:///{tmp}/claims-{n}.db", counts, args.claims)
    if args.postgres:
        with ExitStack() as stack:
            urls = {n: stack.enter_context(pg_schema(args.postgres)) for n in counts}
            run("PostgreSQL", urls.__getitem__, counts, args.claims)
    else:
        print("PostgreSQL: skipped (pass --postgres URL)")


if __name__ == "__main__":
    main()
