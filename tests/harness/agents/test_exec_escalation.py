"""``ExecResult.escalation`` is typed: the report's paths, the report as read, one summary form."""

from __future__ import annotations

from pathlib import Path

from donegate.harness.agents.execute import ExecEscalation, ExecResult, _report
from donegate.harness.escalation import build_report, write_report
from donegate.records.check import CheckResult


def test_a_readable_report_is_kept_typed_and_summarised_with_what_was_left(tmp_path: Path) -> None:
    failed = CheckResult(name="file_exists: b.txt", kind="file_exists", passed=False, detail="no")
    report = build_report(task_id="t", reason="stuck", checks=[failed])
    json_path, md_path = write_report(report, tmp_path)
    escalation = _report(str(json_path))
    assert isinstance(escalation, ExecEscalation)
    assert escalation.json == json_path and escalation.markdown == md_path
    assert escalation.report is not None and escalation.report.task_id == "t"
    assert escalation.summary() == {
        "json": str(json_path),
        "markdown": str(md_path),
        "open_items": [],
        "failed_checks": ["file_exists: b.txt"],
    }
    result = ExecResult(
        status="escalated", reason="r", continuations=3, agent={}, escalation=escalation
    )
    assert result.summary()["escalation"] == escalation.summary()


def test_an_unreadable_report_keeps_its_paths_only(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("{not json")
    escalation = _report(str(path))
    assert escalation is not None and escalation.report is None
    assert escalation.summary() == {"json": str(path), "markdown": str(tmp_path / "r.md")}
    assert _report(None) is None
