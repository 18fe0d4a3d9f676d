"""What judging the agent's changes adds to a claim on a real-sized repository (issue 23).

A workdir of 5,000 files and about 100 MB (2,000 Python modules, a test folder, 3,000 data
files) is recorded at the start (`take_manifest`: the protected tests and the tree of Python
files), then the agent changes five modules and adds one. Per claim, in turns so that load
falls on both alike:

- baseline: what a claim re-digests today, the protected files (`protected_results`);
- review: that plus `review_changes` (the walk, the tamper rules, the scan of the changes).

    .venv/bin/python bench/tamper_review.py [--claims 21]

Printed: p50 and p95 ms of each, the ms the review adds at p50 and the ratio review/baseline.
The issue's bound for everything a claim adds (clean room included) is 1.0 s p50.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from donegate.harness.gate import protected_results  # noqa: E402 - after the path set-up
from donegate.harness.poison import review_changes  # noqa: E402
from donegate.harness.protect import take_manifest  # noqa: E402
from donegate.harness.spec import TaskSpec  # noqa: E402

MODULE = "def f{i}(x):\n    return x + {i}\n" * 120  # about 4 KB


def build(root: Path) -> None:
    """2,000 modules in 40 packages, 200 tests, 2,800 data files of 32 KB: 5,000 files."""
    for p in range(40):
        pkg = root / "src" / f"pkg{p}"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        for m in range(49):
            (pkg / f"mod{m}.py").write_text(MODULE.format(i=m))
    (root / "tests").mkdir()
    for t in range(200):
        (root / "tests" / f"test_{t}.py").write_text(f"def test_{t}():\n    assert True\n")
    blob = os.urandom(32 * 1024)
    for d in range(28):
        folder = root / "data" / f"d{d}"
        folder.mkdir(parents=True)
        for f in range(100):
            (folder / f"blob{f}.bin").write_bytes(blob)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--claims", type=int, default=21)
    args = parser.parse_args()
    spec = TaskSpec.model_validate(
        {"id": "b", "prompt": "p", "checks": [{"run": "python -m pytest -q"}],
         "protect": ["tests/**"]}
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root)
        files = sum(len(f) for _, _, f in os.walk(root))
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        manifest = take_manifest(root, ["tests/**"], allow=())
        for m in range(5):  # the agent's work
            (root / "src" / "pkg0" / f"mod{m}.py").write_text("import os\n" + MODULE.format(i=m))
        (root / "src" / "pkg0" / "helper.py").write_text("def h():\n    return 1\n")
        review_changes(manifest, spec.checks)  # warm: the interpreter probe, as at a first claim
        base, full = [], []
        for _ in range(args.claims):
            started = time.perf_counter()
            protected_results(manifest)
            base.append(time.perf_counter() - started)
            started = time.perf_counter()
            protected_results(manifest)
            found = review_changes(manifest, spec.checks)
            full.append(time.perf_counter() - started)
        assert not found.findings and not found.flags, found

    def ms(xs: list[float], q: float) -> float:
        return sorted(xs)[min(len(xs) - 1, round(q * (len(xs) - 1)))] * 1000

    b50, f50 = statistics.median(base) * 1000, statistics.median(full) * 1000
    print(f"workdir: {files} files, {size / 1e6:.0f} MB; {len(manifest.tree or {})} in the tree")
    print(f"baseline (protected files only): p50 {b50:.1f} ms, p95 {ms(base, 0.95):.1f} ms")
    print(f"with the review:                 p50 {f50:.1f} ms, p95 {ms(full, 0.95):.1f} ms")
    print(f"added at p50: {f50 - b50:.1f} ms; ratio {f50 / b50:.2f}x (bound for all: 1000 ms)")


if __name__ == "__main__":
    main()
