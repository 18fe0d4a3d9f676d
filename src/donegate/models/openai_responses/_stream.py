"""Streamed Responses events -> the same turn the whole body would give.

The final event (``response.completed`` / ``response.incomplete`` / ``response.failed``) carries
the whole response, which is classified exactly like a non-streamed body. Items are also
accumulated from ``response.output_item.added`` / ``.done`` and the deltas in between, because
some servers (the ChatGPT backend) send a final response with an empty ``output`` and because a
stream that breaks (an ``error`` event, or no final event at all) must keep its partial text
and partial tool calls.
"""

from __future__ import annotations

from typing import Any

from donegate.messages import Turn
from donegate.models._rules import make_turn, missing_reason
from donegate.models._sse import loads
from donegate.models.openai_responses._items import API, parse_items
from donegate.models.openai_responses._parse import parse_body, stream_error

__all__ = ["ResponsesStream"]

_FINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
_START = frozenset({"response.created", "response.in_progress", "response.queued"})
_ARGS = frozenset(
    {"response.function_call_arguments.delta", "response.custom_tool_call_input.delta"}
)


_DELTAS = frozenset(
    {
        "response.output_text.delta",
        "response.refusal.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_text.delta",
        *_ARGS,
    }
)
_READ = frozenset(
    {
        *_DELTAS,
        "response.output_item.added",
        "response.output_item.done",
        "error",
        *_FINAL,
        *_START,
    }
)
"""The event types `ResponsesStream.feed` reads; the rest (``content_part.added``, the
``.done`` events that repeat what ``output_item.done`` carries...) it would decode and drop."""


def _unread(event: str, data: str, meta: dict[str, Any]) -> bool:
    """True for an event `feed` would decode only to drop: its type is not one it reads (or is a
    second start event: the first one's response is kept), and its data says the same type as
    its ``event:`` line, in the first field, as OpenAI writes it. Decoding an event costs about
    as much as everything else done with it, and over half of a typical stream's events (and
    its largest: every start event repeats the whole response) are never read."""
    if event in _READ and not (meta and event in _START):
        return False
    return _typed(event, data)


def _typed(event: str, data: str) -> bool:
    """The event's data begins ``{"type":"<event>"``: its type is its ``event:`` line's."""
    return (
        data.startswith('{"type":"')
        and data.startswith('"', 9 + len(event))
        and (data[9 : 9 + len(event)] == event)
    )


class ResponsesStream:
    """Accumulates one streamed response, event by event.

    With `whole` (a whole stream classified at once: no one waits for its text as it comes),
    the deltas are kept as sent and decoded only when the final event does not carry the
    output they built (a stream cut short, a final with an empty ``output``): `feed` then
    returns no text. The turn is the same either way.
    """

    __slots__ = (
        "_added",
        "_args",
        "_done",
        "_ended",
        "_error",
        "_final",
        "_ids",
        "_meta",
        "_pending",
        "_text",
        "_whole",
    )

    def __init__(self, *, whole: bool = False) -> None:
        self._whole = whole
        self._pending: list[tuple[str, str]] = []  # deltas not decoded yet (`whole`)
        self._added: dict[int, dict[str, Any]] = {}
        self._done: dict[int, Any] = {}
        self._ids: dict[str, int] = {}
        self._text: dict[int, dict[tuple[str, int], list[str]]] = {}
        """Content chunks by output index, then (content kind, content/summary index)."""
        self._args: dict[int, list[str]] = {}
        self._meta: dict[str, Any] = {}
        self._final: Any = None
        self._error: dict[str, Any] | None = None
        self._ended = False  # ``[DONE]`` (compatible servers) seen: a normal end

    def _index(self, event: dict[str, Any]) -> int | None:
        index = event.get("output_index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        item_id = event.get("item_id")
        return self._ids.get(item_id) if isinstance(item_id, str) else None

    def _chunk(self, event: dict[str, Any], kind: str, sub: str) -> str:
        delta = event.get("delta")
        index = self._index(event)
        if not isinstance(delta, str) or index is None:
            return ""
        number = event.get(sub)
        key = (kind, number if isinstance(number, int) else 0)
        self._text.setdefault(index, {}).setdefault(key, []).append(delta)
        return delta

    def feed(self, event: str | None, data: str) -> str:
        """Take one SSE event; return the visible text it added."""
        if not data.startswith("{"):
            self._ended = self._ended or data.strip() == "[DONE]"
            return ""  # keep-alives, ``[DONE]`` from compatible servers, garbage
        if event is not None:
            if self._whole and event in _DELTAS and _typed(event, data):
                self._pending.append((event, data))
                return ""
            if _unread(event, data, self._meta):
                return ""
        try:
            obj = loads(data)
        except ValueError:
            return ""
        if not isinstance(obj, dict):
            return ""
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = event
        if self._pending and kind in _DELTAS:  # a delta read now: the deferred ones go first
            self._replay()
        if kind == "response.output_text.delta":
            return self._chunk(obj, "output_text", "content_index")
        if kind == "response.refusal.delta":
            self._chunk(obj, "refusal", "content_index")
        elif kind == "response.reasoning_summary_text.delta":
            self._chunk(obj, "summary_text", "summary_index")
        elif kind == "response.reasoning_text.delta":
            self._chunk(obj, "reasoning_text", "content_index")
        elif kind in _ARGS:
            index, delta = self._index(obj), obj.get("delta")
            if index is not None and isinstance(delta, str):
                self._args.setdefault(index, []).append(delta)
        elif kind == "response.output_item.added":
            index, item = self._index(obj), obj.get("item")
            if index is not None and isinstance(item, dict):
                self._added[index] = item
                if isinstance(item.get("id"), str):
                    self._ids[item["id"]] = index
        elif kind == "response.output_item.done":
            index = self._index(obj)
            if index is not None and "item" in obj:
                self._done[index] = obj["item"]
        elif kind in _FINAL:
            self._final = obj.get("response")
        elif kind in _START:
            if isinstance(obj.get("response"), dict):
                self._meta = obj["response"]
        elif kind == "error":
            self._error = obj
        return ""

    def _replay(self) -> None:
        """Decode the deferred deltas, in order; from here on every delta is read as it comes."""
        pending, self._pending, self._whole = self._pending, [], False
        for event, data in pending:
            self.feed(event, data)

    def _items(self) -> list[Any]:
        """Every item seen: the finished ones as sent, unfinished ones rebuilt from deltas."""
        items: list[Any] = []
        for index in sorted(self._added.keys() | self._done.keys()):
            if index in self._done:
                items.append(self._done[index])
                continue
            item = dict(self._added[index])
            texts = sorted(self._text.get(index, {}).items(), key=lambda kv: kv[0][1])
            kind = item.get("type")
            if kind == "message" and texts:
                item["content"] = [
                    {"type": k[0], "refusal" if k[0] == "refusal" else "text": "".join(v)}
                    for k, v in texts
                ]
            elif kind == "reasoning" and texts:
                for field, part in (("summary", "summary_text"), ("content", "reasoning_text")):
                    found = [{"type": part, "text": "".join(v)} for k, v in texts if k[0] == part]
                    if found:
                        item[field] = found
            elif index in self._args:
                field = "input" if kind == "custom_tool_call" else "arguments"
                item[field] = "".join(self._args[index])
            items.append(item)
        return items

    def finish(self) -> Turn:
        """The turn; without a final event it is an error (``error`` event, or ``[DONE]`` with no
        status: the shared missing-reason rule) or truncated."""
        final = self._final
        if final is not None and not (isinstance(final, dict) and not final.get("output")):
            return parse_body(final)  # the final response carries the output whole
        self._replay()
        if final is not None:
            if self._added or self._done:
                return parse_body(final, self._items())
            return parse_body(final)
        parts = parse_items(self._items(), "output")
        model = self._meta.get("model") if isinstance(self._meta.get("model"), str) else None
        rid = self._meta.get("id") if isinstance(self._meta.get("id"), str) else None
        if self._error is not None:
            return stream_error(
                self._error, raw_reason="error", parts=parts, model=model, response_id=rid
            )
        signal, detail = missing_reason(ended=self._ended)
        return make_turn(
            api=API,
            signal=signal,
            parts=parts,
            raw_reason=None,
            detail=detail,
            model=model,
            response_id=rid,
        )
