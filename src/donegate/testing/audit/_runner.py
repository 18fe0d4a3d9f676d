"""Run an agent program once per scenario against a fresh emulator, and judge each ending.

The program's contract: it runs its agent on the prompt (its last argument, and
``DONEGATE_PROMPT``), exits 0 only when it believes it succeeded, and prints its final answer
as the last line of stdout. Every provider's base-URL variable points at the scenario's own
emulator (127.0.0.1, a fresh one per scenario, side calls answered without a turn), with dummy
keys, so any SDK-based program reaches it unchanged. The wire format is the one the program's
first request used (the emulator's request log), unless ``api`` forces one; a scenario that
format cannot express is skipped and listed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from donegate.errors import UnsupportedTurn, UserError, WireFormatError
from donegate.messages import ToolResult
from donegate.models.registry import wire_format
from donegate.testing.audit._scenarios import (
    CUT_MARKER,
    PACK_VERSION,
    PROMPT,
    SCENARIOS,
    Scenario,
    ToolShape,
)
from donegate.testing.emulator import Emulator
from donegate.testing.player import ScriptedModel

__all__ = ["VERDICTS", "AuditReport", "ScenarioResult", "audit", "pick_scenarios", "run_scenario"]

VERDICTS = (
    "ok",
    "false_done",
    "premature_stop",
    "extra_call",
    "ran_cut_call",
    "gave_up",
    "crashed",
    "hung",
    "skipped",
)
"""Every verdict; ``skipped`` marks a scenario the wire format cannot express."""
DUMMY_KEY = "donegate-audit-dummy-key"


@dataclass(frozen=True, kw_only=True, slots=True)
class ScenarioResult:
    """One scenario's verdict and the evidence for it."""

    name: str
    api: str | None
    verdict: str
    exit_code: int | None
    answer: str
    """The last non-empty line of the program's stdout."""
    requests: int
    """Model requests the emulator served (side calls not counted)."""
    detail: str
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "api": self.api,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "answer": self.answer,
            "requests": self.requests,
            "detail": self.detail,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class AuditReport:
    """Every scenario's result, and the totals."""

    command: tuple[str, ...]
    api: str | None
    scenarios: tuple[ScenarioResult, ...]
    seconds: float = 0.0
    pack_version: str = PACK_VERSION
    skipped: tuple[str, ...] = field(default=())
    finish_tool: str | None = None
    """The tool the scripted answers were calls to (`ToolShape.finish`); None: text answers."""

    @property
    def ok(self) -> bool:
        """True when every scenario that ran is ``ok`` (skipped ones are listed, not failed)."""
        return all(r.verdict in ("ok", "skipped") for r in self.scenarios)

    def summary(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for result in self.scenarios:
            counts[result.verdict] = counts.get(result.verdict, 0) + 1
        return {
            "ok": self.ok,
            "total": len(self.scenarios),
            "verdicts": counts,
            "skipped": [r.name for r in self.scenarios if r.verdict == "skipped"],
            "api": self.api,
            "pack_version": self.pack_version,
            "finish_tool": self.finish_tool,
            "seconds": round(self.seconds, 2),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "command": list(self.command),
            "scenarios": [r.to_json() for r in self.scenarios],
            "summary": self.summary(),
        }


def pick_scenarios(names: Sequence[str] | None) -> list[Scenario]:
    """The named scenarios in pack order (all when `names` is empty); UserError on an unknown."""
    if not names:
        return list(SCENARIOS)
    known = {s.name: s for s in SCENARIOS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UserError(f"unknown scenario {unknown[0]!r}; known: {', '.join(known)}")
    return [s for s in SCENARIOS if s.name in names]


def expressible(scenario: Scenario, api: str, tool: ToolShape) -> str | None:
    """None when `api` can carry every turn of `scenario`, else why not."""
    try:
        ScriptedModel(scenario.script(tool)).responder(api)
    except UnsupportedTurn as exc:
        return str(exc)
    return None


def program_env(base_url: str, prompt: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The audited program's environment: every provider pointed at the emulator, dummy keys."""
    env = dict(os.environ)
    env.update(
        OPENAI_BASE_URL=base_url + "/v1",
        ANTHROPIC_BASE_URL=base_url,
        GOOGLE_GEMINI_BASE_URL=base_url,
        GEMINI_BASE_URL=base_url,
        OPENAI_API_KEY=DUMMY_KEY,
        ANTHROPIC_API_KEY=DUMMY_KEY,
        GEMINI_API_KEY=DUMMY_KEY,
        GOOGLE_API_KEY=DUMMY_KEY,
        DONEGATE_PROMPT=prompt,
    )
    env.update(extra or {})
    return env


def run_scenario(
    scenario: Scenario,
    command: Sequence[str],
    *,
    api: str | None = None,
    tool: ToolShape | None = None,
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
    setup: Callable[[Path], dict[str, str]] | None = None,
) -> ScenarioResult:
    """Run `command` once against a fresh emulator playing `scenario`; judge what it did.

    `setup` prepares the scenario's working directory (a preset's config home) and returns
    more environment for the program.
    """
    tool = tool or ToolShape()
    if api is not None and (why := expressible(scenario, api, tool)) is not None:
        return ScenarioResult(
            name=scenario.name, api=api, verdict="skipped", exit_code=None, answer="",
            requests=0, detail=why,
        )  # fmt: skip
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"donegate-audit-{scenario.name}-") as tmp:
        cwd = Path(tmp) / "work"
        cwd.mkdir()
        extra = dict(env or {})
        if setup is not None:
            extra.update(setup(Path(tmp)))
        with Emulator(scenario.script(tool), side_calls=True) as emu:
            argv = [*command, PROMPT]
            code, out, err, hung = _execute(
                argv, cwd, program_env(emu.base_url, PROMPT, extra), timeout
            )
            log = emu.requests
        marker = (cwd / CUT_MARKER).exists()
    judged = judge(
        scenario,
        tool=tool,
        log=log,
        exit_code=code,
        stdout=out,
        stderr=err,
        hung=hung,
        marker=marker,
        forced_api=api,
        seconds=time.monotonic() - started,
        timeout=timeout,
    )
    if api is None and judged.api is not None:  # format learnt from this very run
        why = expressible(scenario, judged.api, tool)
        if why is not None:
            return replace(judged, verdict="skipped", detail=why)
    return judged


def _execute(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> tuple[int | None, str, str, bool]:
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        raise UserError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from exc
    try:
        out, err = proc.communicate(timeout=timeout)
        return (
            proc.returncode,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
            False,
        )
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), True


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _model_requests(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in log if e.get("kind") == "model" and not e.get("side_call")]


def _ran_cut(requests: list[dict[str, Any]], cut_ids: tuple[str, ...]) -> str | None:
    """The first request carrying a tool result for a cut call, described; None if none."""
    if not cut_ids:
        return None
    for entry in requests:
        body, api = entry.get("body"), entry.get("api")
        if not isinstance(body, dict) or not isinstance(api, str):
            continue
        try:
            messages = wire_format(api).parse_request(body).messages
        except (WireFormatError, ValueError, TypeError, KeyError):
            continue
        for message in messages:
            for part in message.parts:
                # An error result ("input was cut off") refuses the call; any other ran it.
                if isinstance(part, ToolResult) and part.call_id in cut_ids and not part.is_error:
                    return (
                        f"request {entry['seq']} carries a tool result for cut call {part.call_id}"
                    )
    return None


def judge(
    scenario: Scenario,
    *,
    tool: ToolShape,
    log: list[dict[str, Any]],
    exit_code: int | None,
    stdout: str,
    stderr: str,
    hung: bool,
    marker: bool,
    forced_api: str | None,
    seconds: float,
    timeout: float,
) -> ScenarioResult:
    """The verdict on one run, from its exit, its output and the emulator's request log."""
    requests = _model_requests(log)
    api = forced_api or next((e.get("api") for e in requests if e.get("api")), None)
    answer = _last_line(stdout)
    turns = len(scenario.turns(tool))
    extra = [e for e in requests if "script has" in str(e.get("error", ""))]
    served = len(requests) - len(extra)

    def result(verdict: str, detail: str) -> ScenarioResult:
        return ScenarioResult(
            name=scenario.name, api=api, verdict=verdict, exit_code=exit_code, answer=answer,
            requests=len(requests), detail=detail, seconds=seconds,
        )  # fmt: skip

    if hung:
        return result("hung", f"no exit within {timeout:g}s ({len(requests)} requests served)")
    cut = _ran_cut(requests, scenario.cut_ids)
    if cut is not None or marker:
        return result("ran_cut_call", cut or f"the cut call's command ran ({CUT_MARKER} exists)")
    if extra and scenario.answer is not None:
        return result("extra_call", f"{len(requests)} model requests for {turns} scripted turns")
    crashed = exit_code is not None and (exit_code < 0 or "Traceback (most recent" in stderr)
    if not requests:
        return result("crashed", f"exit {exit_code} without a model request; {_tail(stderr)}")
    if scenario.answer is None:
        if exit_code == 0:
            return result("false_done", "exit 0 on an ending that is not an answer")
        if scenario.cut_text is not None and answer and answer == scenario.cut_text:
            return result("false_done", "the cut text was returned as the answer")
        retried = f" (asked {len(extra)} more time(s) past the script)" if extra else ""
        return result("ok", f"exit {exit_code}: not claimed as done{retried}")
    unused = turns - served
    if exit_code == 0:
        if answer == scenario.answer and unused <= 0:
            return result("ok", f"exit 0 with the answer after {_turns(served)}")
        what = "answer differs" if answer != scenario.answer else "answer early"
        return result("premature_stop", f"exit 0 with {unused} of {_turns(turns)} unused ({what})")
    if crashed:
        return result("crashed", _tail(stderr) or f"exit {exit_code}")
    if scenario.recoverable:
        return result("gave_up", f"exit {exit_code} on a recoverable fault; {_tail(stderr)}")
    if unused > 0:
        return result("premature_stop", f"exit {exit_code} with {unused} of {_turns(turns)} unused")
    return result("gave_up", f"exit {exit_code} after every turn; {_tail(stderr)}")


def _tail(text: str, width: int = 160) -> str:
    return _last_line(text)[:width]


def audit(
    command: Sequence[str],
    *,
    api: str | None = None,
    scenarios: Sequence[Scenario] | None = None,
    tool: ToolShape | None = None,
    timeout: float = 30.0,
    workers: int = 4,
    env: dict[str, str] | None = None,
    setup: Callable[[Path], dict[str, str]] | None = None,
) -> AuditReport:
    """Audit `command` on every scenario (concurrently, `workers` at a time).

    Without `api` the first scenario runs alone and the format its first request used is the
    audit's (so the rest can be skipped where that format cannot express them).
    """
    if not command:
        raise UserError("audit: no command given (donegate audit [OPTIONS] -- COMMAND ARGS...)")
    # The program runs in a fresh directory: arguments naming existing relative paths are
    # made absolute, so ``-- python my_agent.py`` works from where it was typed.
    command = [os.path.abspath(a) if not a.startswith("-") and os.path.exists(a) else a
               for a in command]  # fmt: skip
    started = time.monotonic()
    todo = list(scenarios or SCENARIOS)
    results: dict[str, ScenarioResult] = {}

    def one(s: Scenario, a: str | None) -> ScenarioResult:
        return run_scenario(s, command, api=a, tool=tool, timeout=timeout, env=env, setup=setup)

    if api is None and todo:
        first = one(todo[0], None)
        results[first.name] = first
        api = first.api
        todo = todo[1:]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for res in pool.map(lambda s: one(s, api), todo):
            results[res.name] = res
    ordered = tuple(results[s.name] for s in (scenarios or SCENARIOS))
    return AuditReport(
        command=tuple(command), api=api, scenarios=ordered, seconds=time.monotonic() - started,
        finish_tool=tool.finish if tool is not None else None,
    )  # fmt: skip


def _turns(n: int) -> str:
    """``1 turn``, ``2 turns``."""
    return f"{n} turn" if n == 1 else f"{n} turns"
