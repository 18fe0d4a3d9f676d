"""What ``donegate exec`` leaves for CI: step outputs a later step reads, and a Markdown summary.

exec writes these itself, so any CI can use them, not only the GitHub Action:

- `step_outputs`: ``status``, ``exit-code``, ``continuations``, ``checks-passed``,
  ``checks-failed`` (counts), ``certificate`` and ``escalation`` (paths, empty when none);
  `append_outputs` appends them to the file ``GITHUB_OUTPUT`` names, each in the multi-line
  form (``name<<DELIMITER``) with a delimiter the value does not hold, so no value (a path
  with a newline, say) can forge another output.
- `summary_markdown`: the verdict, each check with pass/fail and the tail of its output, each
  continuation with the gate's reason (from the run's ``events.jsonl``), the agent's final
  claim and the certificate's key id. exec appends it to ``GITHUB_STEP_SUMMARY`` and writes it
  to ``--summary FILE`` (GitLab, Buildkite).
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from donegate.harness.agents.execute import ExecResult

__all__ = ["OUTPUT_NAMES", "append_outputs", "continuation_reasons", "step_outputs",
           "summary_markdown"]  # fmt: skip

OUTPUT_NAMES = ("status", "exit-code", "continuations", "checks-passed", "checks-failed",
                "certificate", "escalation")  # fmt: skip
"""The outputs, in the order written (and declared in ``action.yml``)."""
_TAIL_LINES = 20
_TAIL_CHARS = 2000
_CLAIM_CHARS = 2000
_MAX_CERT_BYTES = 64 * 1024 * 1024


def step_outputs(result: ExecResult, exit_code: int) -> dict[str, str]:
    """The step outputs of one exec run, as strings."""
    passed = sum(1 for c in result.checks if c.passed)
    escalation = result.escalation.markdown if result.escalation is not None else None
    return {
        "status": result.status,
        "exit-code": str(exit_code),
        "continuations": str(result.continuations),
        "checks-passed": str(passed),
        "checks-failed": str(len(result.checks) - passed),
        "certificate": str(result.certificate) if result.certificate is not None else "",
        "escalation": str(escalation) if escalation is not None else "",
    }


def append_outputs(path: Path, outputs: dict[str, str]) -> None:
    """Append `outputs` to a ``GITHUB_OUTPUT`` file, each as ``name<<DELIM`` ... ``DELIM``."""
    lines = []
    for name, value in outputs.items():
        delimiter = f"donegate_{secrets.token_hex(8)}"
        while delimiter in value:  # pragma: no cover - 64 random bits
            delimiter = f"donegate_{secrets.token_hex(8)}"
        lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(lines))


def continuation_reasons(result: ExecResult) -> list[str]:
    """The gate's reason for each continuation of the agent's main session, in order."""
    if result.run_dir is None:
        return []
    out = []
    try:
        text = (result.run_dir / "events.jsonl").read_text(encoding="utf-8")
    except OSError:
        return []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        main = isinstance(event, dict) and not event.get("subagent_id")
        if main and event.get("outcome") in ("blocked", "fault"):
            out.append(" ".join(str(event.get("reason", "")).split()))
    return out


def summary_markdown(result: ExecResult, *, task_id: str, exit_code: int) -> str:
    """The run for a person reading the CI job: verdict, checks, continuations, claim, key."""
    verdict = {"done": "✅ done", "awaiting_review": "🕓 awaiting review",
               "escalated": "⚠️ escalated", "failed": "❌ failed"}.get(result.status,
                                                                     result.status)  # fmt: skip
    agent = result.agent.get("name") or "agent"
    version = f" {result.agent['version']}" if result.agent.get("version") else ""
    parts = [
        f"## donegate: {_cell(task_id)} — {verdict}\n",
        f"**{_cell(result.reason)}**\n",
        f"Agent `{_cell(str(agent))}{_cell(version)}`, exit code {exit_code}, "
        f"{result.continuations} continuation(s).\n",
    ]
    if result.checks:
        parts.append("### Checks\n")
        parts.append("| check | result | detail |\n|---|---|---|")
        for c in result.checks:
            mark = "pass" if c.passed else "**FAIL**"
            parts.append(f"| `{_cell(c.name)}` | {mark} | {_cell(c.detail)} |")
        parts.append("")
        for c in result.checks:
            tail = _tail(c.output)
            if tail:
                title = f"{'pass' if c.passed else 'FAIL'}: {c.name}"
                parts.append(f"<details><summary>{_html(title)}</summary>\n\n"
                             f"{_fence(tail)}\n</details>\n")  # fmt: skip
    reasons = continuation_reasons(result)
    if reasons:
        parts.append("### Continuations\n")
        parts.extend(f"{i}. {_cell(r)}" for i, r in enumerate(reasons, 1))
        parts.append("")
    claim = result.agent.get("result")
    if isinstance(claim, str) and claim.strip():
        parts.append("### The agent's final claim\n")
        parts.append(_fence(claim.strip()[-_CLAIM_CHARS:]) + "\n")
    if result.certificate is not None:
        key = certificate_key_id(result.certificate)
        parts.append("### Certificate\n")
        parts.append(f"`{_cell(str(result.certificate))}`" +
                     (f", signed with key `{_cell(key)}`" if key else "") + "\n")  # fmt: skip
    if result.escalation is not None:
        parts.append("### Escalation\n")
        parts.append(f"Report: `{_cell(str(result.escalation.markdown))}`\n")
    if result.problems:
        parts.append("### What stood in the way\n")
        parts.extend(f"- {_cell(p)}" for p in result.problems)
        parts.append("")
    return "\n".join(parts).rstrip("\n") + "\n"


def certificate_key_id(path: Path) -> str | None:
    """The certificate's key id: its ``key_id`` when it has one, else its signature's."""
    try:
        with open(path, "rb") as handle:
            data: Any = json.loads(handle.read(_MAX_CERT_BYTES))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    key = data.get("key_id")
    signature = data.get("signature")
    if not isinstance(key, str) and isinstance(signature, dict):
        key = signature.get("key_id")
    return key if isinstance(key, str) else None


def _tail(output: str) -> str:
    lines = output.rstrip().splitlines()[-_TAIL_LINES:]
    return "\n".join(lines)[-_TAIL_CHARS:]


def _fence(text: str) -> str:
    """`text` in a code fence longer than any run of backticks it holds."""
    ticks = "`" * max(3, _max_ticks(text) + 1)
    return f"{ticks}text\n{text}\n{ticks}"


def _max_ticks(text: str) -> int:
    best = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        best = max(best, run)
    return best


def _cell(text: str) -> str:
    """One line fit for a table cell or inline code (no newlines, no pipes, no backticks)."""
    flat = " ".join(text.split()).replace("|", "\\|").replace("`", "'")
    return flat if len(flat) <= 500 else flat[:497] + "..."


def _html(text: str) -> str:
    return _cell(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
