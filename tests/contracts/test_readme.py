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


def test_the_readme_test_command_runs_every_test() -> None:
    # CI runs this line verbatim, and CI must run every test: the fast tier (./scripts/check's
    # default, a marker expression) would leave the slow and e2e tests out.
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    line = text.partition("# set up and pass every check")[2].splitlines()[1]
    assert line.split() == ["./scripts/check", "--all"]
    script = (ROOT / "scripts" / "check").read_text(encoding="utf-8")
    assert re.search(r"^  --all\)\n    TIER=all$", script, re.M)
    assert re.search(r"^  all\) MARKERS=\(\) ;;$", script, re.M)
    assert 'FAST_TIER="not slow and not e2e"' in script


def test_the_readme_says_how_long_the_test_command_takes() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    comment = text.partition("# set up and pass every check")[2].splitlines()[0]
    assert re.search(r"about \d+ minutes on 2 cores", comment), comment


def test_check_help_prints_its_usage_and_installs_nothing(tmp_path: Path) -> None:
    # A copy outside the repository: were --help not handled first, the script would go on to
    # make tmp_path/.venv with $PYTHON (`false` here), fail, and print no usage.
    script = tmp_path / "scripts" / "check"
    script.parent.mkdir()
    script.write_bytes((ROOT / "scripts" / "check").read_bytes())
    for flag in ("--help", "-h"):
        done = subprocess.run(
            ["bash", str(script), flag],
            env={"PATH": "/usr/bin:/bin", "PYTHON": "false"},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert done.stdout.startswith("Usage: ./scripts/check [--all] [pytest args...]\n")
        assert "--all" in done.stdout and "minutes" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scripts"]
