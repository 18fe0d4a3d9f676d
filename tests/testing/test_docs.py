"""docs/testing.md: every ``python`` block runs, in order, in one namespace, from the repo root."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "testing.md"


def test_the_testing_guide_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 4
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "docs_testing"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "- {tool_call: get_order, args: {order_id: '55219'}, id: c1}" in printed
    assert os.getcwd() == str(ROOT)
