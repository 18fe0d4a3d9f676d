"""The framework-neutral gate: what every integration refuses before any model call."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from donegate.errors import UserError
from donegate.integrations._gate import HostGate


def test_a_task_with_a_checklist_is_refused_before_any_model_call(tmp_path: Path) -> None:
    task = tmp_path / "task.yaml"
    spec = {"id": "t", "prompt": "p", "workdir": str(tmp_path), "checklist": ["a"],
            "checks": [{"file_exists": "x"}]}  # fmt: skip
    task.write_text(yaml.safe_dump(spec))
    with pytest.raises(UserError, match="checklist needs donegate's update_checklist tool"):
        HostGate(task, host="pydantic-ai")


def test_a_missing_task_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"nope\.yaml"):
        HostGate(tmp_path / "nope.yaml", host="langchain")
