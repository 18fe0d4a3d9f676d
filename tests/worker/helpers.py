"""Task specs, models and effect-log readers shared by the worker tests."""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from donegate.messages import Ending, Message, TextPart, ToolCall, Turn
from donegate.models.base import ModelRequest
from donegate.models.function import FunctionModel
from donegate.store.sql import SqlStore

DATA = Path(__file__).parent / "data"
SEND_SCRIPT = DATA / "send.yaml"
SEND_TOOL = {"import": "tests.worker.effects:send", "side_effect": True}
BLIND_TOOL = {"import": "tests.worker.effects:send_blind", "side_effect": True, "name": "send"}
CHECKED_TOOL = {"import": "tests.worker.effects:send_checked", "side_effect": True, "name": "send"}


def task(
    task_id: str,
    workdir: Path,
    *,
    escalate: bool = False,
    model: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A two-turn task: send one message, then claim completion (escalates when asked to)."""
    spec: dict[str, Any] = {
        "id": task_id,
        "prompt": f"send ann the news ({task_id})",
        "type": "mail",
        "model": model or f"script:{SEND_SCRIPT}",
        "tools": [SEND_TOOL],
        "workdir": str(workdir),
        "closure": "model",  # a delivery no check reads back: the model's claim closes it
    }
    if escalate:
        spec.update(checks=[{"file_exists": "never-there.txt"}], max_continuations=0)
    spec.update(extra)
    return spec


def tool_turn(name: str, args: dict[str, Any], call_id: str = "c1") -> Turn:
    call = ToolCall.from_args(id=call_id, name=name, arguments=args)
    return Turn(message=Message(role="assistant", parts=(call,)), ending=Ending.TOOL_USE)


def text_turn(text: str) -> Turn:
    return Turn(
        message=Message(role="assistant", parts=(TextPart(text=text),)), ending=Ending.COMPLETE
    )


def truncated_turn(text: str) -> Turn:
    return Turn(
        message=Message(role="assistant", parts=(TextPart(text=text),)),
        ending=Ending.TRUNCATED,
        raw_reason="max_tokens",
    )


class Killed(BaseException):
    """SIGKILL, in process: escapes the worker without giving the task back or recording."""


class StepModel:
    """A scripted model that knows which steps it may answer: `turns[i]` answers step `first + i`.

    A `Killed` in the list is raised at that step (the worker dies mid-call). A model built with
    ``first > 1`` stands for a resumed run's live model: asked for a step the journal should have
    answered (a request with no assistant message yet), or past its script, it raises.
    """

    def __init__(self, turns: Sequence[Turn | Killed], *, first: int = 1) -> None:
        self.turns = list(turns)
        self.first = first
        self.requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> Turn:
        if self.first > 1 and not any(m.role == "assistant" for m in request.messages):
            raise AssertionError("asked again for step 1, which the journal answered")
        if len(self.requests) >= len(self.turns):
            raise AssertionError(f"asked for step {self.first + len(self.requests)}: unscripted")
        answer = self.turns[len(self.requests)]
        self.requests.append(request)
        if isinstance(answer, Killed):
            raise answer
        return answer

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self, name="function:steps")


class SpyStore:
    """A store that logs its journal, ledger and outcome writes, in order, then makes them."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.writes: list[tuple[str, object]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def journal(self, lease: Any, **kw: Any) -> None:
        self.writes.append(("journal", kw["turn"][0] if kw.get("turn") else None))
        self.store.journal(lease, **kw)

    def effect_open(self, lease: Any, key: str, call: ToolCall, **rows: Any) -> Any:
        turn = rows["turn"][0] if rows.get("turn") else None
        self.writes.append(("journal+begin", (turn, key)))
        return self.store.effect_open(lease, key, call, **rows)

    def effects_open(self, lease: Any, calls: Any, **rows: Any) -> Any:
        turn = rows["turn"][0] if rows.get("turn") else None
        self.writes.append(("journal+begins", (turn, tuple(key for key, _ in calls))))
        return self.store.effects_open(lease, calls, **rows)

    def effect_begin(self, lease: Any, key: str, call: ToolCall, *, reissue: bool = True) -> bool:
        self.writes.append(("begin", key))
        return self.store.effect_begin(lease, key, call, reissue=reissue)

    def effect_record(self, lease: Any, key: str, result: Any) -> None:
        self.writes.append(("record", key))
        self.store.effect_record(lease, key, result)

    def finish(self, lease: Any, outcome: Any, **kw: Any) -> None:
        self.writes.append(("finish", outcome.status))
        self.store.finish(lease, outcome, **kw)


def send_then_claim(
    on_call: Callable[[int, ModelRequest], None] | None = None,
) -> FunctionModel:
    """The scripted two turns as a FunctionModel; `on_call(n, request)` runs before answering."""
    calls = 0

    def respond(request: ModelRequest) -> Turn:
        nonlocal calls
        calls += 1
        if on_call is not None:
            on_call(calls, request)
        return tool_turn("send", {"to": "ann"}) if calls == 1 else text_turn("Sent it.")

    return FunctionModel(respond, name="function:send")


def effect_counts(log: Path) -> tuple[collections.Counter[str], collections.Counter[str]]:
    """``(deliveries, executions)`` per idempotency key, from the tool's own logs."""
    delivered = collections.Counter(line.split(" ", 1)[0] for line in _lines(log))
    executed = collections.Counter(_lines(log.with_name(log.name + ".calls")))
    return delivered, executed


def _lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text().splitlines() if line]
    except FileNotFoundError:
        return []
