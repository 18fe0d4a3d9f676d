"""One type per fact: `scripts/records_audit.py` holds on src/, and catches each kind of copy."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "donegate"


def _audit_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "records_audit", ROOT / "scripts/records_audit.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


AUDIT = _audit_module()


def test_the_audit_holds_on_src(capsys: pytest.CaptureFixture[str]) -> None:
    assert AUDIT.audit(SRC) == []
    assert "store -> harness imports: 0" in capsys.readouterr().out


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "donegate"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    return src


def _records_copy() -> dict[str, str]:
    """src/'s records/ and results.py, the four counts' anchors."""
    files = {f"records/{p.name}": p.read_text() for p in (SRC / "records").glob("*.py")}
    files["results.py"] = (SRC / "results.py").read_text()
    files["harness/agents/judge.py"] = ""
    return files


def test_the_audit_counts_a_clean_tree_clean(tmp_path: Path) -> None:
    problems = AUDIT.audit(_tree(tmp_path, _records_copy()))
    # only the facts this copy lacks (none: records/ and results.py hold them all)
    assert problems == []


@pytest.mark.parametrize(
    ("extra", "found"),
    [
        (
            {"store/x.py": "def f():\n    from donegate.harness.spec import TaskSpec\n"},
            "store imports the harness",
        ),
        (
            {"harness/y.py": 'from typing import Literal\nS = Literal["begun", "done"]\n'},
            "status effect: declared 2 times",
        ),
        (
            {"worker/z.py": "class CheckResult:\n    pass\n"},
            "check result: 2 classes named CheckResult",
        ),
        (
            {
                "server/w.py": "class Shown:\n    name: str\n    kind: str\n    passed: bool\n"
                "    detail: str\n    command: str | None\n    exit_code: int | None\n"
                "    output: str\n    output_digest: str\n    duration_s: float\n    extra: int\n"
            },
            "Shown re-declares the fields of CheckResult",
        ),
    ],
    ids=["store-imports-harness", "second-status", "second-fact-class", "field-copy"],
)
def test_the_audit_catches_each_kind_of_copy(
    tmp_path: Path, extra: dict[str, str], found: str
) -> None:
    problems = AUDIT.audit(_tree(tmp_path, {**_records_copy(), **extra}))
    assert any(found in p for p in problems), problems


def test_importing_the_store_does_not_import_the_harness() -> None:
    code = (
        "import sys, donegate.store\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('donegate.harness'))\n"
        "print(loaded)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_audit_wants_each_status_as_an_enum(tmp_path: Path) -> None:
    files = _records_copy()
    enum = (
        'class EffectStatus(StrEnum):\n    """A side effect in the effects ledger: ``done`` once '
        'its result is recorded."""\n\n    BEGUN = "begun"\n    DONE = "done"\n'
    )
    assert enum in files["records/status.py"]
    files["records/status.py"] = files["records/status.py"].replace(
        enum, 'EffectStatus = Literal["begun", "done"]\n'
    )
    problems = AUDIT.audit(_tree(tmp_path, files))
    assert any("status effect" in p and "is a Literal, not an enum" in p for p in problems), (
        problems
    )


def test_each_status_enum_holds_the_strings_stored_and_sent() -> None:
    from donegate.records import status

    for name, values in AUDIT.STATUSES.items():
        enum = {
            "task": status.TaskStatus,
            "run": status.Status,
            "item": status.ItemStatus,
            "escalation": status.EscalationStatus,
            "outbox": status.OutboxStatus,
            "effect": status.EffectStatus,
            "attempt": status.AttemptStatus,
        }[name]
        assert {m.value for m in enum} == values, name
        assert all(isinstance(m, str) and f"{m}" == m.value for m in enum), name
