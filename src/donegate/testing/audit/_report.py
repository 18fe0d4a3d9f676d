"""The report card as Markdown or self-contained HTML (plain templates, every value escaped)."""

from __future__ import annotations

import html

from donegate.testing.audit._runner import AuditReport

__all__ = ["render_html", "render_markdown"]

_COLUMNS = ("scenario", "api", "verdict", "exit", "last line", "requests", "detail")


def _rows(report: AuditReport) -> list[tuple[str, ...]]:
    return [
        (r.name, r.api or "-", r.verdict, "-" if r.exit_code is None else str(r.exit_code),
         r.answer, str(r.requests), r.detail)
        for r in report.scenarios
    ]  # fmt: skip


def _md_cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("`", "'")[:200]


def _finish(summary: dict[str, object]) -> str:
    tool = summary.get("finish_tool")
    return f" (answers as calls to {tool})" if tool else ""


def render_markdown(report: AuditReport) -> str:
    """A Markdown table of every scenario plus the summary line."""
    s = report.summary()
    lines = [
        "# donegate audit",
        "",
        f"Command: `{_md_cell(' '.join(report.command))}`; API: {s['api'] or 'unknown'}; "
        f"scenario pack v{s['pack_version']}{_finish(s)}; {s['seconds']} s.",
        "",
        "| " + " | ".join(_COLUMNS) + " |",
        "|" + "---|" * len(_COLUMNS),
    ]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in _rows(report)]
    verdicts = ", ".join(f"{k}: {v}" for k, v in sorted(s["verdicts"].items()))
    lines += ["", f"**{'PASS' if report.ok else 'FAIL'}** ({verdicts})", ""]
    return "\n".join(lines)


def render_html(report: AuditReport) -> str:
    """One self-contained HTML page (inline CSS, no scripts), every value escaped."""
    e = html.escape
    s = report.summary()
    head = "".join(f"<th>{e(c)}</th>" for c in _COLUMNS)
    body = "".join(
        f'<tr class="{e(row[2])}">' + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>"
        for row in _rows(report)
    )
    verdicts = ", ".join(f"{k}: {v}" for k, v in sorted(s["verdicts"].items()))
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>donegate audit</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
        "tr.ok td:nth-child(3){color:#070}tr:not(.ok) td:nth-child(3){color:#b00}</style>"
        f"</head><body><h1>donegate audit</h1><p>Command: <code>{e(' '.join(report.command))}"
        f"</code>; API: {e(str(s['api']))}; pack v{e(s['pack_version'])}{e(_finish(s))}; "
        f"{s['seconds']} s</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        f"<p><b>{'PASS' if report.ok else 'FAIL'}</b> ({e(verdicts)})</p></body></html>\n"
    )
