"""The built-in scenario pack: the endings that break agent loops, each with its right outcome.

A scenario is a script (turns only: the audited program runs its own tools) plus what a correct
program does with it: either it finishes with the scripted answer (`Scenario.answer`), or it
must not claim success (`Scenario.answer` is None). Tool calls name one tool, chosen per audit
(`ToolShape`: ``bash``/``command`` by default, ``Bash``/``command`` for Claude Code), since a
scripted call must name a tool the program really has for the program to run it.

The scripted answer is text, or, for an agent that finishes only through a tool (the Agents
SDK's gate ends a run only through ``task_complete``), a call to that tool carrying the same
answer (`ToolShape.finish`). The same pack in that shape is run against the plain agent and the
gated one alike, so the two are compared on the same endings; the verdicts do not change.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from donegate._files import load_data
from donegate.errors import ScriptError
from donegate.testing.script import Script, parse_script

__all__ = [
    "ANSWER",
    "PACK_VERSION",
    "PROMPT",
    "SCENARIOS",
    "Scenario",
    "ToolShape",
    "load_scenarios",
]

PACK_VERSION = "1"
"""Bumped whenever a scenario's turns or right outcome change (reports carry it)."""
PROMPT = "Create the file audit_work.txt, then say what you did."
"""The prompt every scenario sends (also ``DONEGATE_PROMPT``)."""
ANSWER = "AUDIT-ANSWER: audit_work.txt is written."
"""The scripted final answer: a correct program prints it as its last stdout line."""
WORK = "echo done > audit_work.txt"
CUT_MARKER = "AUDIT_CUT_RAN"
"""A file the cut call's command would create, were its partial arguments run anyway."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolShape:
    """The one tool scripted calls use: its name and the argument holding a shell command."""

    name: str = "bash"
    arg: str = "command"
    finish: str | None = None
    """A finish tool: when set, scenarios that end in an answer end with a call to it (the
    answer in `finish_arg`) instead of a text turn."""
    finish_arg: str = "summary"
    """The finish tool's argument that carries the answer."""

    def answer(self) -> dict[str, Any]:
        """The scripted answer turn: `ANSWER` as text, or as the finish tool's argument."""
        if self.finish is None:
            return {"text": ANSWER}
        return {"tool_call": self.finish, "args": {self.finish_arg: ANSWER}, "id": "finish1"}

    def call(self, command: str, call_id: str) -> dict[str, Any]:
        return {"tool_call": self.name, "args": {self.arg: command}, "id": call_id}

    def cut(self, call_id: str) -> dict[str, Any]:
        raw = '{"' + self.arg + '": "touch ' + CUT_MARKER + "; echo partial"
        return {"tool_call": self.name, "args_raw": raw, "id": call_id, "ending": "truncated"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Scenario:
    """One ending to audit: turns (built per `ToolShape`), and the right outcome."""

    name: str
    description: str
    answer: str | None
    """The answer a correct program prints; None when it must exit non-zero."""
    recoverable: bool = False
    """A transport fault the program should ride out (non-zero is `gave_up`)."""
    cut_text: str | None = None
    """Text cut at the output limit: returning it as the answer is `false_done`."""
    cut_ids: tuple[str, ...] = ()
    """Ids of calls cut mid-arguments: a tool result for one is `ran_cut_call`."""
    custom_turns: tuple[Mapping[str, Any], ...] | None = None
    """A scenario file's own turns (as written); None for the built-in pack."""

    def turns(self, tool: ToolShape) -> list[dict[str, Any]]:
        if self.custom_turns is not None:
            return [dict(t) for t in self.custom_turns]
        return _TURNS[self.name](tool)

    def script(self, tool: ToolShape) -> Script:
        data: Mapping[str, Any] = {"prompt": PROMPT, "turns": self.turns(tool)}
        return parse_script(data, source=f"audit:{self.name}")


_CUT = "The file audit_work.txt has been"


def _work_then_answer(tool: ToolShape, *first: dict[str, Any]) -> list[dict[str, Any]]:
    return [*first, tool.call(WORK, "w1"), tool.answer()]


_TURNS: dict[str, Callable[[ToolShape], list[dict[str, Any]]]] = {
    "finished": _work_then_answer,
    "truncated_text": lambda t: [
        {"text": _CUT, "ending": "truncated"},
        {"text": _CUT + " written and", "ending": "truncated"},
    ],
    "truncated_call": lambda t: [t.cut("cut1"), t.cut("cut2")],
    "refused": lambda t: [{"text": "I can't help with that.", "ending": "refused"}],
    "filtered": lambda t: [{"text": "The file", "ending": "filtered"}],
    "empty": lambda t: [{"text": ""}],
    "whitespace": lambda t: [{"text": "  \n  "}],
    "thinking_only": lambda t: [{"thinking": "I should create the file first."}],
    "paused_chain": lambda t: _work_then_answer(t, {"text": "Searching.", "ending": "paused"}),
    "progress_report": lambda t: _work_then_answer(
        t, {"text": "Progress: step 1 of 2 done; continuing with the file next."}
    ),
    "malformed_call": lambda t: _work_then_answer(
        t,
        {
            "tool_call": t.name,
            "args_raw": '{"' + t.arg + '": ',
            "id": "bad1",
            "ending": "malformed_tool_call",
            "stop_details": "Malformed function call: unterminated arguments",
        },
    ),
    "rate_limited": lambda t: _work_then_answer(
        t, {"http_error": 429, "retry_after": 1, "message": "Rate limit reached"}
    ),
    "server_error_then_ok": lambda t: _work_then_answer(
        t, {"http_error": 500, "message": "Internal server error"}
    ),
    "overloaded": lambda t: _work_then_answer(
        t, {"http_error": 529, "retry_after": 1, "message": "Overloaded"}
    ),
    "disconnect": lambda t: _work_then_answer(t, {"disconnect": True}),
    "extra_call": lambda t: [
        {
            "tool_calls": [
                {"tool": t.name, "args": {t.arg: WORK}, "id": "p1"},
                {"tool": t.name, "args": {t.arg: "cat audit_work.txt"}, "id": "p2"},
            ]
        },
        t.answer(),
    ],
}

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(name="finished", description="a tool call, then the answer", answer=ANSWER),
    Scenario(
        name="truncated_text",
        description="text cut at the output limit, twice",
        answer=None,
        cut_text=_CUT,
    ),
    Scenario(
        name="truncated_call",
        description="a tool call cut mid-arguments, twice",
        answer=None,
        cut_ids=("cut1", "cut2"),
    ),
    Scenario(name="refused", description="the model refuses", answer=None),
    Scenario(name="filtered", description="a content filter stops the turn", answer=None),
    Scenario(name="empty", description="an empty turn", answer=None),
    Scenario(name="whitespace", description="a turn of whitespace only", answer=None),
    Scenario(name="thinking_only", description="thinking, no visible text", answer=None),
    Scenario(
        name="paused_chain",
        description="a paused server-side turn (pause_turn), resent, then work and answer",
        answer=ANSWER,
    ),
    Scenario(
        name="progress_report",
        description="a tool-less progress report before the work is done",
        answer=ANSWER,
    ),
    Scenario(
        name="malformed_call",
        description="a malformed function call, then work and answer",
        answer=ANSWER,
    ),
    Scenario(
        name="rate_limited",
        description="429 with retry-after, then work and answer",
        answer=ANSWER,
        recoverable=True,
    ),
    Scenario(
        name="server_error_then_ok",
        description="a 500, then work and answer",
        answer=ANSWER,
        recoverable=True,
    ),
    Scenario(
        name="overloaded",
        description="529 overloaded, then work and answer",
        answer=ANSWER,
        recoverable=True,
    ),
    Scenario(
        name="disconnect",
        description="the connection dropped unanswered, then work and answer",
        answer=ANSWER,
        recoverable=True,
    ),
    Scenario(
        name="extra_call",
        description="two parallel calls in one turn, then the answer: one more call is extra",
        answer=ANSWER,
    ),
)
"""The pack, in report order."""


_FILE_KEYS = ("name", "description", "answer", "recoverable", "cut_text", "cut_ids", "turns")


def load_scenarios(directory: str | os.PathLike[str]) -> list[Scenario]:
    """Scenario files (``*.yaml``/``*.yml``/``*.json``) from `directory`, sorted by name.

    A file: ``{name?, description?, answer: TEXT or null, recoverable?, cut_text?, cut_ids?,
    turns: [...]}`` with turns as in a script (the prompt is the audit's). `ScriptError` (a
    `UserError`) names the file and the field on any problem.
    """
    root = Path(directory)
    files = sorted(p for p in root.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
    if not files:
        raise ScriptError(f"{root}: no scenario files (*.yaml, *.yml, *.json)")
    found = []
    for path in files:
        data = load_data(path)
        if not isinstance(data, dict):
            raise ScriptError(f"{path}: a scenario file is a mapping")
        unknown = sorted(set(data) - set(_FILE_KEYS))
        if unknown:
            raise ScriptError(
                f"{path}: unknown field {unknown[0]!r}; known: {', '.join(_FILE_KEYS)}"
            )
        turns = data.get("turns")
        if not isinstance(turns, list) or not turns:
            raise ScriptError(f"{path}: turns: a non-empty list of turns is required")
        answer = data.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise ScriptError(f"{path}: answer: text, or null for an ending that is not an answer")
        scenario = Scenario(
            name=str(data.get("name") or path.stem),
            description=str(data.get("description") or ""),
            answer=answer,
            recoverable=bool(data.get("recoverable", False)),
            cut_text=data.get("cut_text"),
            cut_ids=tuple(str(i) for i in data.get("cut_ids") or ()),
            custom_turns=tuple(turns),
        )
        scenario.script(ToolShape())  # parse now: a bad turn is an error naming the file
        found.append(scenario)
    return found
