"""``donegate audit``: run any agent program (or a gateway) against the endings that break loops.

`audit` runs a program once per built-in scenario (`SCENARIOS`) against a fresh emulator and
returns an `AuditReport` of verdicts (`VERDICTS`); `render_markdown` / `render_html` write it.
"""

from __future__ import annotations

from donegate.testing.audit._report import render_html, render_markdown
from donegate.testing.audit._runner import (
    VERDICTS,
    AuditReport,
    ScenarioResult,
    audit,
    pick_scenarios,
    run_scenario,
)
from donegate.testing.audit._scenarios import (
    ANSWER,
    PACK_VERSION,
    PROMPT,
    SCENARIOS,
    Scenario,
    ToolShape,
)

__all__ = [
    "ANSWER",
    "PACK_VERSION",
    "PROMPT",
    "SCENARIOS",
    "VERDICTS",
    "AuditReport",
    "Scenario",
    "ScenarioResult",
    "ToolShape",
    "audit",
    "pick_scenarios",
    "render_html",
    "render_markdown",
    "run_scenario",
]
