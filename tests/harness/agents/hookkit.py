"""Helpers of the agent-CLI hook tests: task files, captured payloads, state and reports."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from donegate.harness.agents import HookOutcome

EXAMPLES = Path(__file__).resolve().parent / "examples"
"""Payloads captured from the real CLIs (``shared/agent-hooks/examples``)."""


def write_task(path: Path, **fields: Any) -> Path:
    """A task file: id ``ship``, one check (``done.txt`` exists), unless `fields` say otherwise."""
    data: dict[str, Any] = {
        "id": "ship",
        "prompt": "Ship it.",
        "checks": [{"file_exists": "done.txt"}],
        "max_continuations": 2,
    }
    data.update(fields)
    path.write_text(yaml.safe_dump(data))
    return path


def payload(agent: str, cwd: Path, *, session: str = "s1", **fields: Any) -> dict[str, Any]:
    """What `agent` sends at a stop (the captured example, with this test's ids and paths)."""
    name = {"claude": "claude-2.1.332-stop-stdin.json", "codex": "codex-0.171.0-stop-stdin.json",
            "gemini": "gemini-0.61.0-afteragent-stdin.json"}[agent]  # fmt: skip
    data: dict[str, Any] = json.loads((EXAMPLES / name).read_text())
    data.update(session_id=session, cwd=str(cwd), transcript_path=None)
    data.update(fields)
    return data


Hook = Callable[..., HookOutcome]
"""``hook(agent, stdin, **options)``: the `hook` fixture's call."""


def state_files(data: Path) -> list[Path]:
    """Every hook state record under the data directory."""
    return sorted(p for p in (data / "hooks").rglob("*.json") if ".tampered-" not in p.name)


def reports(data: Path) -> list[dict[str, Any]]:
    """The escalation reports (JSON) under the data directory."""
    folder = data / "escalations"
    if not folder.is_dir():
        return []
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
