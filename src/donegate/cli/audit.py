"""``donegate audit``: run an agent program once per scenario and print its report card.

Exit 0 when every verdict is ``ok`` (skipped scenarios are listed, not failed), 1 otherwise,
2 for usage or bad input.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from donegate.cli._app import app
from donegate.cli._console import make_console
from donegate.errors import UserError
from donegate.testing.player import SDK_APIS

__all__ = ["audit_command"]


@app.command("audit", context_settings={"ignore_unknown_options": True})
@click.option("--api", type=click.Choice(SDK_APIS), help="Force this wire format.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report card to FILE.md (Markdown) or FILE.html.",
)  # fmt: skip
@click.option(
    "--scenarios", "only", metavar="DIR|NAMES",
    help="A directory of scenario files, or comma-separated built-in names (default: all).",
)  # fmt: skip
@click.option(
    "--timeout", type=click.FloatRange(min=0.1, max=86400.0), default=30.0, show_default=True,
    callback=lambda _ctx, _param, value: _finite(value),
    help="Seconds each run may take before it is `hung`.",
)  # fmt: skip
@click.option("--workers", type=click.IntRange(min=1, max=32), default=4, show_default=True)
@click.option(
    "--preset", type=click.Choice(["claude-code", "codex", "gemini-cli"]),
    help="Audit an agent CLI with its headless flags and a temp config home.",
)  # fmt: skip
@click.option("--tool", default="bash", show_default=True, help="Tool scripted calls name.")
@click.option("--tool-arg", default="command", show_default=True, help="Its command argument.")
@click.option(
    "--finish-tool", metavar="NAME",
    help="End the answered scenarios with a call to this tool instead of text (an agent that "
    "finishes only through a tool); run the plain agent with the same option to compare.",
)  # fmt: skip
@click.option(
    "--finish-arg", default="summary", show_default=True, help="The finish tool's answer argument."
)
@click.option("--gateway", metavar="URL", help="Audit a gateway (proxy) instead of a program.")
@click.option(
    "--upstream-port", type=click.IntRange(0, 65535), default=8790, show_default=True,
    help="Gateway mode: the port of the emulator the gateway must forward to.",
)  # fmt: skip
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def audit_command(  # noqa: PLR0917 (click passes options positionally)
    api: str | None,
    as_json: bool,
    report_path: Path | None,
    only: str | None,
    timeout: float,
    workers: int,
    preset: str | None,
    tool: str,
    tool_arg: str,
    finish_tool: str | None,
    finish_arg: str,
    gateway: str | None,
    upstream_port: int,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND once per scenario against a fresh emulator and judge each ending."""
    from donegate.testing.audit import (
        ToolShape,
        audit,
        pick_scenarios,
        render_html,
        render_markdown,
    )
    from donegate.testing.audit._presets import PRESETS

    if report_path is not None and report_path.suffix.lower() not in (".md", ".html", ".htm"):
        raise UserError(f"--report {report_path}: the file must end in .md or .html")
    if only is not None and Path(only).is_dir():
        from donegate.testing.audit._scenarios import load_scenarios

        scenarios = load_scenarios(only)
    else:
        scenarios = pick_scenarios([n.strip() for n in (only or "").split(",") if n.strip()])
    if gateway is not None:
        from donegate.testing.audit._gateway import audit_gateway, gateway_upstream

        if api is None:
            raise UserError("--gateway needs --api (the wire format the gateway speaks)")
        if command:
            raise UserError("--gateway takes no COMMAND")
        shape = ToolShape(name=tool, arg=tool_arg, finish=finish_tool, finish_arg=finish_arg)
        with gateway_upstream(scenarios, tool=shape, port=upstream_port) as upstream:
            click.echo(f"upstream emulator on {upstream.base_url}", err=True)
            report = audit_gateway(
                gateway, api=api, upstream=upstream, scenarios=scenarios, tool=shape,
                timeout=timeout,
            )  # fmt: skip
    else:
        shape = ToolShape(name=tool, arg=tool_arg, finish=finish_tool, finish_arg=finish_arg)
        setup = None
        argv = list(command)
        if preset is not None:
            chosen = PRESETS[preset]
            argv = [*chosen.command, *argv]
            shape = replace(chosen.tool, finish=finish_tool, finish_arg=finish_arg)
            setup = chosen.setup
        if not argv:
            raise UserError("no COMMAND given: donegate audit [OPTIONS] -- COMMAND ARGS...")
        report = audit(
            argv, api=api, scenarios=scenarios, tool=shape, timeout=timeout,
            workers=workers, setup=setup,
        )  # fmt: skip
    if report_path is not None:
        html = report_path.suffix.lower() != ".md"
        text = render_html(report) if html else render_markdown(report)
        report_path.write_text(text, encoding="utf-8")
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        _print_table(report)
    sys.exit(0 if report.ok else 1)


def _finite(value: float) -> float:
    if math.isnan(value):  # NaN passes click's range check
        raise click.BadParameter("not a number")
    return value


def _print_table(report: object) -> None:
    from donegate.testing.audit import AuditReport

    assert isinstance(report, AuditReport)
    table = Table(title=f"donegate audit ({report.api or 'api unknown'})")
    for column in ("scenario", "verdict", "exit", "last line", "requests", "detail"):
        table.add_column(column)
    for r in report.scenarios:
        style = "green" if r.verdict == "ok" else "yellow" if r.verdict == "skipped" else "red"
        table.add_row(
            r.name, f"[{style}]{r.verdict}[/]", "-" if r.exit_code is None else str(r.exit_code),
            escape(r.answer[:60]), str(r.requests), escape(r.detail[:100]),
        )  # fmt: skip
    console = make_console()
    console.print(table)
    s = report.summary()
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(s["verdicts"].items()))
    console.print(f"{'PASS' if report.ok else 'FAIL'} ({counts}) in {s['seconds']} s")
