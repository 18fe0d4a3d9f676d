#!/usr/bin/env python3
"""Audit each framework's example agent plain and gated; write the side-by-side tables.

Runs `donegate.testing.audit.audit` on ``examples/integrations/*_agent.py`` twice per framework
(plain, then ``--gated``) with the same pack and flags, and rewrites the block between the
``<!-- audit-tables -->`` markers of docs/integrations.md from what it measured, so the table
there can be re-checked by running this again. The Agents SDK pair runs the pack with
``--finish-tool task_complete``: its gated agent ends only through that tool, and the plain one
is given the same tool (the SDK's ``StopAtTools``), so both answer the same endings.

Usage: scripts/integrations_audit.py [--only NAME[,NAME]] [--workers N] [--json OUT] [--check]
  --check  exit 1 when a gated agent has a verdict other than ok/skipped (docs untouched)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from donegate.testing.audit import AuditReport, ToolShape, audit

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "integrations"
DOCS = ROOT / "docs" / "integrations.md"
START, END = "<!-- audit-tables:start -->", "<!-- audit-tables:end -->"
GOOD = ("ok", "skipped")


@dataclass(frozen=True)
class Framework:
    """One framework's audit: its example program, wire format, and tool shape."""

    name: str
    title: str
    example: str
    api: str
    tool: ToolShape
    packages: tuple[str, ...]

    def command(self, *, gated: bool) -> list[str]:
        argv = [sys.executable, str(EXAMPLES / self.example)]
        return [*argv, "--gated"] if gated else argv

    def heading(self) -> str:
        versions = ", ".join(f"{p} {version(p)}" for p in self.packages)
        finish = f", answers as `{self.tool.finish}` calls" if self.tool.finish else ""
        return f"### {self.title} ({versions}; `{self.api}`{finish})"


FRAMEWORKS = (
    Framework(
        name="pydantic-ai",
        title="pydantic-ai",
        example="pydantic_ai_agent.py",
        api="openai-responses",
        tool=ToolShape(),
        packages=("pydantic-ai-slim",),
    ),
    Framework(
        name="langchain",
        title="LangChain (ChatOpenAI)",
        example="langchain_agent.py",
        api="openai-chat",
        tool=ToolShape(),
        packages=("langchain", "langchain-openai"),
    ),
    Framework(
        name="openai-agents",
        title="OpenAI Agents SDK",
        example="openai_agents_agent.py",
        api="openai-responses",
        tool=ToolShape(finish="task_complete"),
        packages=("openai-agents",),
    ),
)
"""The three frameworks, in the docs' order."""


def run(framework: Framework, *, gated: bool, workers: int, timeout: float) -> AuditReport:
    """One audit of the framework's example agent, plain or gated.

    The gated agents write certificates and reports: into ``$DONEGATE_HOME`` when it is set
    (a test's), else into a temporary one, never the user's ``~/.donegate``.
    """
    with tempfile.TemporaryDirectory(prefix="donegate-integrations-audit-") as home:
        return audit(
            framework.command(gated=gated),
            api=framework.api,
            tool=framework.tool,
            workers=workers,
            timeout=timeout,
            env={"DONEGATE_HOME": os.environ.get("DONEGATE_HOME", home)},
        )


def broken(report: AuditReport) -> list[str]:
    """``scenario: verdict`` for every verdict that is not ok or skipped."""
    return [f"{r.name}: {r.verdict}" for r in report.scenarios if r.verdict not in GOOD]


def _counts(report: AuditReport) -> str:
    verdicts: dict[str, int] = report.summary()["verdicts"]
    return ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items(), key=lambda kv: -kv[1]))


def table(framework: Framework, plain: AuditReport, gated: AuditReport) -> str:
    """The Markdown section of one framework: a row per scenario, plain beside gated."""
    lines = [
        framework.heading(),
        "",
        "| scenario | plain | exit | requests | gated | exit | requests |",
        "|---|---|---|---|---|---|---|",
    ]
    gated_by_name = {r.name: r for r in gated.scenarios}
    for p in plain.scenarios:
        g = gated_by_name[p.name]
        cells = [p.name]
        for r in (p, g):
            cells += [r.verdict, "-" if r.exit_code is None else str(r.exit_code), str(r.requests)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Plain: {_counts(plain)}. Gated: {_counts(gated)}.", ""]
    return "\n".join(lines)


def write_docs(sections: list[str]) -> None:
    """Replace the block between the markers in docs/integrations.md."""
    text = DOCS.read_text(encoding="utf-8")
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    if not rest or END not in rest:
        raise SystemExit(f"{DOCS}: the markers {START} / {END} are missing")
    block = "\n".join(["", *sections]).rstrip("\n") + "\n"
    DOCS.write_text(head + START + "\n" + block + END + tail, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated framework names")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--json", type=Path, help="write every report's JSON here")
    parser.add_argument("--check", action="store_true", help="judge only; leave the docs alone")
    args = parser.parse_args(argv)
    chosen = [f for f in FRAMEWORKS if not args.only or f.name in args.only.split(",")]
    sections, reports, failed = [], {}, []
    for framework in chosen:
        plain = run(framework, gated=False, workers=args.workers, timeout=args.timeout)
        gated = run(framework, gated=True, workers=args.workers, timeout=args.timeout)
        reports[framework.name] = {"plain": plain.to_json(), "gated": gated.to_json()}
        sections.append(table(framework, plain, gated))
        bad = broken(gated)
        failed += [f"{framework.name} gated {b}" for b in bad]
        print(f"{framework.name}: plain {_counts(plain)}; gated {_counts(gated)}", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    if not args.check and len(chosen) == len(FRAMEWORKS):
        write_docs(sections)
    for line in failed:
        print(f"broken: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
