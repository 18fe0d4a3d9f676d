"""The README's first example runs and prints what the README says it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_example_prints_its_documented_output() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code, shown = re.search(r"```python\n(.*?)```\n```\n(.*?)```", text, re.S).groups()  # type: ignore[union-attr]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == shown


def test_readme_names_the_two_commands_ci_relies_on() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "donegate demo" in text
    assert "./scripts/check" in text
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # CI runs both commands as the README writes them: it reads them from the README itself.
    assert "# run the main job" in text and "# set up and pass every check" in text
    assert "/^# run the main job/" in ci and "/^# set up and pass every check/" in ci
