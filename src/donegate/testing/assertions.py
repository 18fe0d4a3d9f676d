"""Assertions on whole transcripts: the ones that pay for a multi-turn test (seed 004).

The final sentence came from the script, so asserting on it proves nothing; what the loop built
is the message list, and that is where id threading, re-appended prompts and invented arguments
show. Every assertion takes a transcript in any form `transcript_from` reads: a donegate
`RunResult`, a list of `Message`s, a `ModelRequest`, a `ScriptedModel`, an `Emulator` or its
request log entries, so one test reads the same way for donegate's loop and for any other agent
run against the emulator.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from donegate.messages import Message, ToolCall, ToolResult
from donegate.models.base import ModelRequest
from donegate.models.registry import wire_format

__all__ = [
    "assert_argument_from_result",
    "assert_results_match_calls",
    "assert_tool_order",
    "assert_user_message_once_first",
    "transcript_from",
]

_MISSING = object()


def transcript_from(obj: Any, *, conversation: str | int | None = None) -> tuple[Message, ...]:
    """The messages of a run, read from whatever the test has at hand.

    A `RunResult` gives its transcript; a `ModelRequest` its messages; a `ScriptedModel` the
    last request it received plus the turn it answered with; an `Emulator` or a list of its
    request-log entries (dicts, as ``GET /_donegate/requests`` returns them) the last model
    request of `conversation` (default: the conversation of the last model request), read with
    the wire format's ``parse_request``, plus the turn served to it.
    """
    from donegate.testing.emulator import Emulator
    from donegate.testing.player import ScriptedModel

    if isinstance(obj, Emulator):
        entries = obj.requests
        models = {c.name: c.model for c in obj.conversations}
        return _from_log(entries, conversation, models)
    if isinstance(obj, ScriptedModel):
        if not obj.requests:
            return ()
        messages = obj.requests[-1].messages
        index = obj.calls - 1
        if index < len(obj.turns):
            messages = (*messages, obj.turns[index].message)
        return tuple(messages)
    if isinstance(obj, ModelRequest):
        return obj.messages
    transcript: Any = getattr(obj, "transcript", _MISSING)
    if transcript is not _MISSING:
        return tuple(transcript)
    if isinstance(obj, Mapping):
        obj = [obj]
    if isinstance(obj, Sequence) and not isinstance(obj, str | bytes):
        if all(isinstance(m, Message) for m in obj):
            return tuple(obj)
        if all(isinstance(e, Mapping) for e in obj):
            return _from_log(obj, conversation, {})
    raise TypeError(
        f"cannot read a transcript from {type(obj).__name__}: expected a RunResult, messages, "
        "a ModelRequest, a ScriptedModel, an Emulator or emulator log entries"
    )


def _from_log(
    entries: Sequence[Mapping[str, Any]],
    conversation: str | int | None,
    models: Mapping[str, Any],
) -> tuple[Message, ...]:
    calls = [e for e in entries if e.get("kind", "model") == "model" and e.get("api")]
    calls = [e for e in calls if isinstance(e.get("body"), Mapping)]
    if conversation is not None:
        key = "conversation_index" if isinstance(conversation, int) else "conversation"
        calls = [e for e in calls if e.get(key) == conversation]
    elif calls and "conversation" in calls[-1]:
        calls = [e for e in calls if e.get("conversation") == calls[-1]["conversation"]]
    if not calls:
        return ()
    last = calls[-1]
    messages = wire_format(str(last["api"])).parse_request(last["body"]).messages
    model = models.get(str(last.get("conversation")))
    turn = last.get("turn")
    if model is not None and isinstance(turn, int) and turn < len(model.turns):
        messages = (*messages, model.turns[turn].message)
    return tuple(messages)


def _calls(transcript: Sequence[Message]) -> list[ToolCall]:
    return [c for m in transcript if m.role == "assistant" for c in m.tool_calls]


def _describe(transcript: Sequence[Message]) -> str:
    lines = []
    for i, m in enumerate(transcript):
        bits = [repr(m.text[:40])] if m.text else []
        bits += [f"call {c.name}({c.id})" for c in m.tool_calls]
        bits += [f"result {r.name}({r.call_id})" for r in m.results]
        lines.append(f"  [{i}] {m.role}: {', '.join(bits) or '(no text)'}")
    return "\n".join(lines)


def _fail(message: str, transcript: Sequence[Message]) -> AssertionError:
    return AssertionError(f"{message}\ntranscript:\n{_describe(transcript)}")


def assert_results_match_calls(obj: Any, *, allow_pending: bool = True) -> None:
    """Every tool call is answered once, by its own id, in call order, after it was made.

    Catches a missing, a duplicated and a misattached result, and a result placed before the
    assistant message that asked for it. Calls of a final assistant message may go unanswered
    when `allow_pending` (a transcript can end on a turn whose tools never ran).
    """
    transcript = transcript_from(obj)
    calls = [c.id for c in _calls(transcript)]
    results: list[str] = []
    asked: set[str] = set()
    pending: list[str] = []
    for i, message in enumerate(transcript):
        if message.role == "assistant":
            if pending:
                raise _fail(
                    f"message [{i}]: the model was asked again before call(s) "
                    f"{', '.join(pending)} were answered",
                    transcript,
                )
            pending = [c.id for c in message.tool_calls]
            asked.update(pending)
        for result in message.results:
            results.append(result.call_id)
            if result.call_id not in asked:
                raise _fail(
                    f"message [{i}]: result for {result.call_id!r} comes before any call with "
                    "that id",
                    transcript,
                )
            if result.call_id in pending:
                pending.remove(result.call_id)
    if pending and allow_pending and transcript and transcript[-1].role == "assistant":
        calls = calls[: len(calls) - len(pending)]
    if calls != results:
        raise _fail(f"call ids {calls} != result ids {results}", transcript)


def _users(transcript: Sequence[Message]) -> list[tuple[int, Message]]:
    return [
        (i, m)
        for i, m in enumerate(transcript)
        if m.role == "user" and not (m.results and not m.text)
    ]


def assert_user_message_once_first(obj: Any, text: str | None = None) -> None:
    """The user's message appears exactly once, before anything but system messages.

    A loop that re-appends the input each turn grows the prompt every iteration; this catches
    it. With `text`, the message must also say exactly that.
    """
    transcript = transcript_from(obj)
    users = _users(transcript)
    if len(users) != 1:
        raise _fail(f"expected one user message, found {len(users)}", transcript)
    index, message = users[0]
    before = [m.role for m in transcript[:index]]
    if any(role != "system" for role in before):
        raise _fail(f"the user message is at [{index}], after {before}", transcript)
    if text is not None and message.text != text:
        raise _fail(f"the user message is {message.text!r}, expected {text!r}", transcript)


def _lookup(value: Any, path: str) -> Any:
    for key in path.split(".") if path else ():
        if isinstance(value, Mapping) and key in value:
            value = value[key]
        elif isinstance(value, list) and _index(key, len(value)):
            value = value[int(key)]
        else:
            return _MISSING
    return value


def _index(key: str, size: int) -> bool:
    return key.lstrip("-").isdigit() and -size <= int(key) < size


def assert_argument_from_result(
    obj: Any, *, call: tuple[str, str], source: tuple[str, str]
) -> None:
    """A call's argument equals a field of an earlier tool's result: information flowed forward.

    ``call=("get_refund_policy", "sku"), source=("get_order", "sku")`` checks every
    ``get_refund_policy`` call: its ``sku`` argument equals the ``sku`` in the result of the
    latest ``get_order`` call answered before it. Paths may be dotted (``items.0.sku``).
    """
    transcript = transcript_from(obj)
    (call_tool, call_path), (source_tool, source_path) = call, source
    latest: ToolResult | None = None
    checked = 0
    for i, message in enumerate(transcript):
        for result in message.results:
            if result.name == source_tool or _name_of(transcript, result.call_id) == source_tool:
                latest = result
        if message.role != "assistant":
            continue
        for tc in message.tool_calls:
            if tc.name != call_tool:
                continue
            checked += 1
            if latest is None:
                raise _fail(
                    f"message [{i}]: {call_tool}({tc.id}) was called before any {source_tool} "
                    "result",
                    transcript,
                )
            got = _lookup(tc.arguments or {}, call_path)
            try:
                data = json.loads(latest.content)
            except ValueError:
                data = latest.content
            want = _lookup(data, source_path)
            if want is _MISSING:
                raise _fail(
                    f"the {source_tool} result ({latest.call_id}) has no {source_path!r}: "
                    f"{latest.content[:200]}",
                    transcript,
                )
            if got is _MISSING or got != want:
                shown = "missing" if got is _MISSING else repr(got)
                raise _fail(
                    f"message [{i}]: {call_tool}({tc.id}).{call_path} is {shown}, but "
                    f"{source_tool}({latest.call_id}) returned {source_path}={want!r}",
                    transcript,
                )
    if not checked:
        raise _fail(f"no {call_tool} call in the transcript", transcript)


def _name_of(transcript: Sequence[Message], call_id: str) -> str | None:
    for c in _calls(transcript):
        if c.id == call_id:
            return c.name
    return None


def assert_tool_order(obj: Any, names: Sequence[str]) -> None:
    """The tools were called exactly in this order (every call, parallel calls in call order)."""
    transcript = transcript_from(obj)
    called = [c.name for c in _calls(transcript)]
    if called != list(names):
        raise _fail(f"tools called {called}, expected {list(names)}", transcript)
