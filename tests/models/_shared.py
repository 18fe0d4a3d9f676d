"""The checks every adapter's test module makes the same way, each on its own wire data.

Each adapter's module keeps its own bodies, events, ids and expected values, and its own test
functions (one collected test per adapter, as before); what reads the same for every format (the
protocol, malformed bodies, bodies and events of any shape, error turns, the refusal to serve,
the request round trip and its transcript strategy) is written once here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from donegate.errors import UnsupportedTurn, WireFormatError
from donegate.messages import (
    Ending,
    Message,
    Part,
    RefusalPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    Turn,
)
from donegate.models import registry
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec, WireFormat, WireResponse

if TYPE_CHECKING:
    import openai


def json_values(*, allow_nan: bool = True) -> st.SearchStrategy[Any]:
    """Any JSON-shaped value, nested a few levels: what a broken or hostile server may send."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=allow_nan)
        | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=20,
    )


def with_any_field(
    bodies: st.SearchStrategy[dict[str, Any]], keys: Sequence[str], values: st.SearchStrategy[Any]
) -> st.SearchStrategy[dict[str, Any]]:
    """Each of `bodies` with one of `keys` set to one of `values`: a real shape that a broken or
    hostile server bent in one place."""
    return st.builds(
        lambda body, key, value: {**body, key: value}, bodies, st.sampled_from(list(keys)), values
    )


def error_bodies(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """An error body as it may arrive: a value, raw bytes, or JSON text."""
    return st.one_of(values, st.binary(max_size=20), values.map(json.dumps))


def garbage_events(
    names: Iterable[str | None], payloads: st.SearchStrategy[str]
) -> st.SearchStrategy[list[tuple[str | None, str]]]:
    """Up to twelve ``(event, data)`` pairs: real and made-up event names, any payloads."""
    return st.lists(st.tuples(st.sampled_from(list(names)), payloads), max_size=12)


def check_registered(wire: WireFormat, api: str, kind: type[Any] | None = None) -> None:
    """`wire` implements the protocol (and is a `kind`), is named `api` and is what the registry
    hands out for that name."""
    assert isinstance(wire, WireFormat)
    if kind is not None:
        assert isinstance(wire, kind)
    assert wire.name == api
    assert registry.wire_format(api) is wire


def check_malformed(wire: WireFormat, bad: Any, path: str, *, api: str | None = None) -> None:
    """A malformed body raises a wire-format error naming the field (and the API, if given)."""
    with pytest.raises(WireFormatError) as info:
        wire.parse_response(bad)
    assert info.value.path == path
    if api is not None:
        assert info.value.api == api


def check_not_an_object(wire: WireFormat, bad: Any) -> None:
    """A body that is not a JSON object is a wire-format error."""
    with pytest.raises(WireFormatError):
        wire.parse_response(bad)


def check_turn_or_wire_error(wire: WireFormat, value: Any) -> None:
    """Any value gives a classified turn or a wire-format error, nothing else."""
    try:
        turn = wire.parse_response(value)
    except WireFormatError:
        return
    assert isinstance(turn, Turn) and isinstance(turn.ending, Ending)


def check_accumulator_survives(wire: WireFormat, events: list[tuple[str | None, str]]) -> None:
    """Any events fed to a fresh accumulator give text back and a turn at the end."""
    acc = wire.stream()
    for event, data in events:
        assert isinstance(acc.feed(event, data), str)
    assert isinstance(acc.finish(), Turn)


def check_error_turn(turn: Turn, *, status: int, ending: Ending, **error: Any) -> None:
    """An HTTP error's turn: its ending, the status (also the raw reason), no content, and each
    `ErrorInfo` field named in `error` (``type``, ``message``, ``retry_after``) as given."""
    assert turn.ending is ending
    assert turn.error is not None and turn.error.status == status
    assert {k: getattr(turn.error, k) for k in error} == error
    assert turn.raw_reason == str(status) and turn.message.parts == ()


def check_cut_off(wire: WireFormat, *streams: str, text: str | None = None) -> None:
    """Each stream stopped before its closing event: truncated, saying so, keeping `text`."""
    for stream in streams:
        turn = wire.parse_stream(stream)
        assert turn.ending is Ending.TRUNCATED
        assert turn.detail == "stream ended before its final event"
        if text is not None:
            assert turn.text == text


def check_no_reason(wire: WireFormat, stream: str, *, text: str) -> None:
    """A stream that reached its closing event without a stop reason: an error, saying so,
    keeping the text it streamed."""
    turn = wire.parse_stream(stream)
    assert (turn.ending, turn.detail) == (Ending.ERROR, "no finish reason")
    assert turn.text == text


def check_same_turn(streamed: Turn, whole: Turn, ending: Ending, *fields: str) -> None:
    """A streamed turn ends in `ending` with the same message, raw reason and usage as the whole
    body gave, and the same value for each of `fields` (``model``, ``response_id``)."""
    assert streamed.ending is ending and whole.ending is ending
    assert streamed.message == whole.message
    for name in ("raw_reason", "usage", *fields):
        assert getattr(streamed, name) == getattr(whole, name), name


def check_refuses(wire: WireFormat, turn: Turn, match: str, *, stream: bool) -> None:
    """A format the emulator does not serve refuses `turn`, naming its ending and the API."""
    with pytest.raises(UnsupportedTurn, match=match):
        wire.render_response(turn, stream=stream)


def check_round_trip(wire: WireFormat, messages: tuple[Message, ...], model: str = "m") -> None:
    """Rendering a request and parsing it back gives the same transcript."""
    request = ModelRequest(model=model, messages=messages)
    assert wire.parse_request(wire.render_request(request)).messages == messages


TEXTS = st.text(min_size=1, max_size=12)
"""Non-empty short texts (an empty text part is dropped by every format)."""

THINKING = st.builds(ThinkingPart, text=st.text(max_size=10))
"""Reasoning as plain text (Cohere, Mistral)."""

SIGNED_THINKING = st.builds(ThinkingPart, text=st.text(max_size=10), signature=TEXTS)
"""Reasoning with the signature the provider returns to check it (Anthropic, Bedrock)."""


def call_ids(prefix: str) -> st.SearchStrategy[str]:
    """Call ids of the shape ``<prefix><4 to 8 hex digits>``."""
    return st.text(alphabet="abcdef0123456789", min_size=4, max_size=8).map(lambda s: prefix + s)


ARGUMENTS = st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3)
"""A tool call's arguments."""


def transcripts(
    ids: st.SearchStrategy[str],
    *,
    thinking: st.SearchStrategy[ThinkingPart],
    plan: st.SearchStrategy[ThinkingPart] | None = None,
    raw_arguments: bool = False,
    result_errors: bool = False,
) -> st.SearchStrategy[tuple[Message, ...]]:
    """Well-formed transcripts in what a format can carry: alternating turns, every call
    answered in the next message.

    `ids` are the format's call ids and `thinking` its reasoning parts; `plan` is a reasoning
    part sent before calls (Cohere's tool plan); `raw_arguments` lets calls carry any text as
    arguments; `result_errors` lets tool results carry an error flag.
    """

    @st.composite
    def build(draw: st.DrawFn) -> tuple[Message, ...]:
        out: list[Message] = []
        if draw(st.booleans()):
            out.append(Message.system(draw(TEXTS)))
        out.append(Message.user(draw(TEXTS)))
        for _ in range(draw(st.integers(0, 3))):
            call_ids = draw(st.lists(ids, max_size=3, unique=True))
            parts: list[Part] = []
            if plan is not None and call_ids and draw(st.booleans()):
                parts.append(draw(plan))
            if draw(st.booleans()):
                parts.append(draw(thinking))
            if draw(st.booleans()):
                parts.append(TextPart(text=draw(TEXTS)))
            for i in call_ids:
                if raw_arguments and draw(st.booleans()):
                    raw = draw(st.text(max_size=12))
                    parts.append(ToolCall.from_raw(id=i, name="f", arguments_raw=raw))
                else:
                    parts.append(ToolCall.from_args(id=i, name="f", arguments=draw(ARGUMENTS)))
            if not parts:
                parts.append(TextPart(text=draw(TEXTS)))
            out.append(Message(role="assistant", parts=tuple(parts)))
            if not call_ids:
                out.append(Message.user(draw(TEXTS)))
                continue
            results = [
                ToolResult(
                    call_id=i,
                    name="f",
                    content=draw(st.text(max_size=8)),
                    is_error=result_errors and draw(st.booleans()),
                )
                for i in call_ids
            ]
            out.append(Message.tool_results(results))
            if draw(st.booleans()):
                out.append(Message.user(draw(TEXTS)))
        return tuple(out)

    return build()


def requests(
    model: str,
    *,
    prompts: st.SearchStrategy[Message],
    assistants: Callable[[int], st.SearchStrategy[Message]],
    tools: st.SearchStrategy[ToolSpec],
    extra_bodies: Sequence[dict[str, Any]],
    stop: bool = False,
    parallel_needs_tools: bool = False,
) -> st.SearchStrategy[ModelRequest]:
    """Whole requests in what an OpenAI format can carry: an optional system message, up to four
    rounds of a prompt (`prompts`), the assistant's turn (`assistants(round)`) and the results
    of its calls; up to two `tools`; and every setting.

    `stop` adds stop sequences (Chat Completions has them); `parallel_needs_tools` leaves
    ``parallel_tool_calls`` unset without tools (the format drops it then); `extra_bodies` are
    the format's own extra fields.
    """
    texts = st.text(max_size=12)

    @st.composite
    def build(draw: st.DrawFn) -> ModelRequest:
        messages: list[Message] = []
        if draw(st.booleans()):
            messages.append(Message.system(draw(texts)))
        for turn in range(draw(st.integers(0, 4))):
            messages.append(draw(prompts))
            assistant = draw(assistants(turn))
            messages.append(assistant)
            if assistant.tool_calls:
                results = [
                    ToolResult(call_id=c.id, name=c.name, content=draw(texts))
                    for c in assistant.tool_calls
                ]
                messages.append(Message.tool_results(results))
        specs = tuple(draw(st.lists(tools, max_size=2)))
        parallel = draw(st.none() | st.booleans())
        return ModelRequest(
            model=model,
            messages=tuple(messages),
            tools=specs,
            settings=ModelSettings(
                max_tokens=draw(st.none() | st.integers(1, 10**5)),
                temperature=draw(st.none() | st.floats(0, 2)),
                top_p=draw(st.none() | st.floats(0, 1)),
                stop=tuple(draw(st.lists(st.text(min_size=1, max_size=4), max_size=3)))
                if stop
                else (),
                tool_choice=draw(st.sampled_from([None, "auto", "required", "none", "weather"])),
                parallel_tool_calls=None if parallel_needs_tools and not specs else parallel,
                extra_body=draw(st.sampled_from(list(extra_bodies))),
            ),
            stream=draw(st.booleans()),
        )

    return build()


def custom_call(call_id: str, name: str, text: str, details: dict[str, Any]) -> ToolCall:
    """A custom (free-form input) tool call as both OpenAI formats read it: the input kept raw
    and as ``{"input": text}``, with the format's `details`."""
    return ToolCall(
        id=call_id,
        name=name,
        arguments_raw=text,
        arguments={"input": text},
        provider_details=details,
    )


def check_custom_call(turn: Turn, expected: ToolCall) -> None:
    """`turn` ends in one tool call, the custom call `expected`: every field alike (id, name,
    raw input, input as arguments, no parse error, provider details)."""
    assert turn.ending is Ending.TOOL_USE
    (call,) = turn.tool_calls
    assert call == expected


def call_triples(turn: Turn) -> list[tuple[str, str, str]]:
    """A turn's calls as ``(id, name, arguments_raw)``: what must survive a round trip."""
    return [(c.id, c.name, c.arguments_raw) for c in turn.tool_calls]


def turn_of(ending: Ending, *parts: Part, **extra: Any) -> Turn:
    """An assistant turn of `parts` ending in `ending` (`extra`: other `Turn` fields)."""
    return Turn(message=Message(role="assistant", parts=parts), ending=ending, **extra)


def openai_sdk(answer: WireResponse) -> openai.OpenAI:
    """The official ``openai`` client, answered by `answer` through a mock transport (no
    retries): it reads what the emulator serves the way users' code does."""
    import httpx2
    import openai

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            answer.status,
            text=answer.body,
            headers={"content-type": answer.content_type, **answer.headers},
        )

    return openai.OpenAI(
        api_key="sk-test",
        base_url="https://api.openai.com/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )


# -- tests every adapter's module declares with its own data ------------------------------------

Test = Callable[..., None]
"""A test function, collected under the name the adapter's module gives it."""


def non_object_test(wire: WireFormat) -> Test:
    """A body that is not a JSON object (none, a list, a string, a number) raises."""

    @pytest.mark.parametrize("bad", [None, [], "text", 3])
    def test(bad: Any) -> None:
        check_not_an_object(wire, bad)

    return test


def any_body_test(wire: WireFormat, bodies: st.SearchStrategy[Any]) -> Test:
    """Any of `bodies` gives a turn or a wire-format error."""

    @settings(suppress_health_check=[HealthCheck.too_slow])
    @given(bodies)
    def test(value: Any) -> None:
        check_turn_or_wire_error(wire, value)

    return test


def cut_off_test(wire: WireFormat, *streams: str, text: str | None = None) -> Test:
    """Each of `streams`, stopped before its closing event, is truncated (`check_cut_off`)."""

    def test() -> None:
        check_cut_off(wire, *streams, text=text)

    return test


def no_reason_test(wire: WireFormat, stream: str, *, text: str) -> Test:
    """`stream` reached its closing event without a stop reason: an error (`check_no_reason`)."""

    def test() -> None:
        check_no_reason(wire, stream, text=text)

    return test


def any_error_body_test(
    wire: WireFormat, bodies: st.SearchStrategy[Any], endings: Iterable[Ending] = ()
) -> Test:
    """`parse_error` never raises on any of `bodies` with any status (and, where `endings` are
    given, ends in one of them)."""
    allowed = tuple(endings)

    @given(st.integers(100, 599), bodies)
    def test(status: int, error_body: Any) -> None:
        turn = wire.parse_error(status, error_body)
        assert isinstance(turn, Turn)
        if allowed:
            assert turn.ending in allowed

    return test


def any_events_test(
    wire: WireFormat, events: st.SearchStrategy[list[tuple[str | None, str]]]
) -> Test:
    """Any of `events` fed to a fresh accumulator never crashes it."""

    @given(events)
    def test(events: list[tuple[str | None, str]]) -> None:
        check_accumulator_survives(wire, events)

    return test


def round_trip_test(
    wire: WireFormat, messages: st.SearchStrategy[tuple[Message, ...]], *, model: str = "m"
) -> Test:
    """Every transcript of `messages` survives rendering and parsing back."""

    @given(messages)
    def test(messages: tuple[Message, ...]) -> None:
        check_round_trip(wire, messages, model)

    return test


def refusal_test(wire: WireFormat, body: Any, match: str) -> Test:
    """The turn `body` gives is refused by `render_response`, whole and streamed."""

    @pytest.mark.parametrize("stream", [False, True])
    def test(stream: bool) -> None:
        check_refuses(wire, wire.parse_response(body), match, stream=stream)

    return test


def check_finish_or_wire_error(wire: WireFormat, datas: Iterable[str]) -> None:
    """Any ``data:`` payloads fed to a fresh accumulator give text back, and its end is a turn
    or a wire-format error."""
    acc = wire.stream()
    for data in datas:
        assert isinstance(acc.feed(None, data), str)
    try:
        turn = acc.finish()
    except WireFormatError:
        return
    assert isinstance(turn.ending, Ending)


def served_turns(turn_of: Callable[..., Turn]) -> dict[str, Turn]:
    """The turns every format the emulator serves renders the same way, by name: cut off (text
    and a call), filtered, refused, empty and a malformed call; `turn_of` adds what the format
    needs (ids, model)."""
    return {
        "truncated": turn_of(Ending.TRUNCATED, TextPart(text="1. Alabama\n2. Alaska\n3. Ari")),
        "truncated_call": turn_of(
            Ending.TRUNCATED,
            ToolCall.from_raw(
                id="call_T", name="write", arguments_raw='{"path": "notes.md", "body": "Mon'
            ),
        ),
        "filtered": turn_of(Ending.FILTERED, TextPart(text="I'm sorry, but")),
        "refused": turn_of(Ending.REFUSED, RefusalPart(text="I can't help with that.")),
        "empty": turn_of(Ending.EMPTY),
        "malformed": turn_of(
            Ending.MALFORMED_TOOL_CALL,
            ToolCall.from_raw(id="call_M", name="f", arguments_raw='{"x": tru'),
        ),
    }
