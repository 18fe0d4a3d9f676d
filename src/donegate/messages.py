"""The canonical turn model: plain, frozen values every adapter maps to and from.

A transcript is a sequence of `Message`s; each message holds `Part`s. A model response is a
`Turn`: the assistant message plus how it ended (`Ending`), the provider's raw reason, usage.
Opaque provider data that must round-trip lives in ``provider_details``, read only by adapters.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, Literal, TypeAlias, TypeVar, overload

from donegate._frozen import fast_init

__all__ = [
    "NO_USAGE",
    "Ending",
    "ErrorInfo",
    "MediaPart",
    "Message",
    "Part",
    "RefusalPart",
    "Role",
    "ServerToolPart",
    "TextPart",
    "ThinkingPart",
    "ToolCall",
    "ToolResult",
    "Turn",
    "Usage",
    "parse_arguments",
]


class Ending(StrEnum):
    """How one model turn ended, normalized across providers.

    Its mapping to the standard vocabularies (`donegate.telemetry.otel.FINISH_REASONS`, and
    `donegate.integrations.langchain.message_turn` the other way):

    ====================  ===================================  ==============================
    Ending                OTel ``gen_ai.response.finish_reasons``  LangChain ``finish_reason``
    ====================  ===================================  ==============================
    complete              ``stop``                             ``stop`` / ``end_turn``
    empty                 ``stop`` (no visible text)           ``stop`` with no text
    tool_use              ``tool_call``                        ``tool_calls`` / ``tool_use``
    truncated             ``length``                           ``length`` / ``max_tokens``
    filtered              ``content_filter``                   ``content_filter`` / ``SAFETY``
    refused               ``content_filter``                   ``additional_kwargs.refusal``
    error                 ``error``                            (the call raises)
    context_exceeded      ``error``                            (the call raises)
    malformed_tool_call   ``error``                            ``invalid_tool_calls``
    paused                none: the raw reason (``pause_turn``)  ``pause_turn``
    ====================  ===================================  ==============================

    OTel's enum also has ``compaction``, which no donegate ending produces. LangChain carries the
    provider's own reason in ``AIMessage.response_metadata`` (``finish_reason``, or
    ``stop_reason``), and ``normalized_finish_reason`` in the langchain-core releases that have
    it, which `message_turn` reads first. A span keeps the raw reason beside the standard one
    (``donegate.response.finish_reason``) and this ending (``donegate.ending``).
    """

    COMPLETE = "complete"
    """A normal stop with visible output and no client tool call."""
    TOOL_USE = "tool_use"
    """A normal stop with at least one well-formed client tool call."""
    TRUNCATED = "truncated"
    """Cut by the output-token limit (text or a tool call's arguments)."""
    FILTERED = "filtered"
    """Stopped or blocked by a content filter or guardrail."""
    REFUSED = "refused"
    """The model (or a safety classifier) declined, with a structured refusal signal."""
    PAUSED = "paused"
    """A server-side tool loop paused (Anthropic ``pause_turn``): resend as-is."""
    CONTEXT_EXCEEDED = "context_exceeded"
    """The prompt or the conversation no longer fits the context window."""
    EMPTY = "empty"
    """A normal stop with no client tool call and no visible non-whitespace text."""
    ERROR = "error"
    """The provider failed: an error status, a failed response, a stream that broke."""
    MALFORMED_TOOL_CALL = "malformed_tool_call"
    """A client tool call whose arguments do not parse, or a call the provider rejected."""


Role: TypeAlias = Literal["system", "user", "assistant", "tool"]


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class TextPart:
    """Visible text."""

    text: str
    """The text as the model wrote it."""
    provider_details: Mapping[str, Any] | None = None
    """Opaque provider data (citations, annotations) kept for round-tripping."""
    kind: Literal["text"] = "text"


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ThinkingPart:
    """Reasoning or thinking; never an answer."""

    text: str
    """The reasoning text or summary (may be empty when the provider hides it)."""
    signature: str | None = None
    """The provider's signature or encrypted content that must be sent back verbatim."""
    redacted: bool = False
    """True for redacted/encrypted thinking whose text is not visible."""
    progress: bool = False
    """True when the block is a progress update (Opus 5.5 ``display: "updates"``)."""
    provider_details: Mapping[str, Any] | None = None
    """Opaque provider data kept for round-tripping."""
    kind: Literal["thinking"] = "thinking"


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class RefusalPart:
    """A structured refusal (OpenAI ``message.refusal`` / ``refusal`` content part)."""

    text: str
    """The refusal explanation."""
    provider_details: Mapping[str, Any] | None = None
    """Opaque provider data (Anthropic ``stop_details``) kept for round-tripping."""
    kind: Literal["refusal"] = "refusal"


@dataclass(frozen=True, kw_only=True, slots=True)
class MediaPart:
    """Non-text output (an image, audio), counted as real output but not as text."""

    mime_type: str
    """The media type, e.g. ``image/png``."""
    data: str | None = None
    """Base64 data, when inline."""
    uri: str | None = None
    """A URI, when referenced."""
    provider_details: Mapping[str, Any] | None = None
    """Opaque provider data (a Gemini ``thoughtSignature`` on an image) kept for round-tripping."""
    kind: Literal["media"] = "media"


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a tool call's raw argument string: ``(arguments, None)`` or ``(None, error)``.

    An empty string means no arguments. JSON ``null`` parses to ``{}``: it is valid JSON and
    providers send it for argument-less calls. Anything else that is not a JSON object is an error.
    """
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return None, f"arguments are not valid JSON: {exc}"
    if value is None:
        return {}, None
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """A client tool call: the harness must run it and answer with a `ToolResult`."""

    id: str
    """The call id the result must carry."""
    name: str
    """The tool name."""
    arguments_raw: str
    """The argument string exactly as the model produced it (possibly cut off)."""
    arguments: Mapping[str, Any] | None = None
    """The parsed arguments, or None when they do not parse."""
    parse_error: str | None = None
    """Why the arguments did not parse, or None."""
    provider_details: Mapping[str, Any] | None = None
    """Opaque provider data (call type, item id, thought signature) kept for round-tripping."""
    kind: Literal["tool_call"] = "tool_call"

    @classmethod
    def from_raw(
        cls,
        *,
        id: str,
        name: str,
        arguments_raw: str,
        provider_details: Mapping[str, Any] | None = None,
    ) -> ToolCall:
        """Build a call from its raw argument string, parsing it once."""
        args, error = parse_arguments(arguments_raw)
        return cls(
            id=id,
            name=name,
            arguments_raw=arguments_raw,
            arguments=args,
            parse_error=error,
            provider_details=provider_details,
        )

    @classmethod
    def from_args(
        cls,
        *,
        id: str,
        name: str,
        arguments: Mapping[str, Any] | None,
        provider_details: Mapping[str, Any] | None = None,
    ) -> ToolCall:
        """Build a call from already-parsed arguments (Anthropic, Gemini, Bedrock)."""
        args = dict(arguments or {})
        return cls(
            id=id,
            name=name,
            arguments_raw=json.dumps(args, separators=(",", ":")),
            arguments=args,
            provider_details=provider_details,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ServerToolPart:
    """A tool the provider ran itself (web search, code execution): no client action."""

    name: str
    """The server tool's name or block type."""
    id: str | None = None
    """The provider's id, if any."""
    data: Mapping[str, Any] = field(default_factory=dict)
    """The block as the provider sent it, for round-tripping."""
    kind: Literal["server_tool"] = "server_tool"


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResult:
    """The harness's answer to one `ToolCall`."""

    call_id: str
    """The id of the call this answers."""
    name: str
    """The tool name (Gemini pairs results by name)."""
    content: str
    """The result as text (JSON for structured results)."""
    is_error: bool = False
    """True when the tool failed or the call was rejected."""
    kind: Literal["tool_result"] = "tool_result"


Part: TypeAlias = (
    TextPart | ThinkingPart | RefusalPart | MediaPart | ToolCall | ServerToolPart | ToolResult
)


_V = TypeVar("_V")


class _derived(Generic[_V]):
    """A view computed on first read and kept in the instance, like `functools.cached_property`
    without its lock: on Python 3.11 that lock costs ~1.5 us on every first read, and each new
    message of a run is read so several times. A frozen message's view is a pure function of
    its parts, so two threads racing on a first read compute the same value."""

    def __init__(self, compute: Callable[[Any], _V]) -> None:
        self._compute = compute
        self._name: str = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._name = name

    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None) -> _derived[_V]: ...

    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> _V: ...

    def __get__(self, instance: object | None, owner: type[Any] | None = None) -> Any:
        if instance is None:
            return self
        value = self._compute(instance)
        instance.__dict__[self._name] = value  # later reads find it before this descriptor
        return value


@dataclass(frozen=True, kw_only=True)
class Message:
    """One message of a transcript.

    Not slotted, unlike the parts: its derived views (`text`, `tool_calls`, `results`,
    `thinking`) are computed once and kept in the instance (the parts are frozen), since the
    loop and the adapters read them on every turn for every message of the history.
    """

    role: Role
    """``system``, ``user``, ``assistant`` or ``tool`` (tool results)."""
    parts: tuple[Part, ...]
    """The message's content, in order."""

    @classmethod
    def user(cls, text: str) -> Message:
        """A user message holding one text part."""
        return cls(role="user", parts=(TextPart(text=text),))

    @classmethod
    def system(cls, text: str) -> Message:
        """A system message holding one text part."""
        return cls(role="system", parts=(TextPart(text=text),))

    @classmethod
    def tool_results(cls, results: Iterable[ToolResult]) -> Message:
        """A message carrying tool results, in the order given."""
        return cls(role="tool", parts=tuple(results))

    # list comprehensions, not generators: each view is read for every new message of a run

    def _text(self) -> str:
        """The visible text of the message."""
        return "".join([p.text for p in self.parts if isinstance(p, TextPart)])

    def _tool_calls(self) -> tuple[ToolCall, ...]:
        """The client tool calls in the message."""
        return tuple([p for p in self.parts if isinstance(p, ToolCall)])

    def _results(self) -> tuple[ToolResult, ...]:
        """The tool results in the message."""
        return tuple([p for p in self.parts if isinstance(p, ToolResult)])

    def _thinking(self) -> tuple[ThinkingPart, ...]:
        """The thinking parts in the message, progress updates included."""
        return tuple([p for p in self.parts if isinstance(p, ThinkingPart)])

    # not annotated: annotated, a dataclass would take them for fields
    text = _derived(_text)
    tool_calls = _derived(_tool_calls)
    results = _derived(_results)
    thinking = _derived(_thinking)


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class Usage:
    """Token usage of one or more model calls."""

    input_tokens: int = 0
    """Prompt tokens, cache reads included."""
    output_tokens: int = 0
    """Generated tokens, reasoning included."""
    cache_read_tokens: int = 0
    """Prompt tokens served from the provider's cache."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the provider's cache."""
    reasoning_tokens: int = 0
    """Output tokens spent on reasoning."""

    def __add__(self, other: Usage) -> Usage:
        if self is NO_USAGE:  # a run's first call: its sum so far is the call's own usage
            return other
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


NO_USAGE = Usage()
"""No tokens: where a run's usage starts (shared: a `Usage` is frozen)."""


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ErrorInfo:
    """What an error body or error event said."""

    status: int | None = None
    """The HTTP status, when the error came as a response."""
    type: str | None = None
    """The provider's error type or code, e.g. ``rate_limit_error``."""
    message: str = ""
    """The provider's message."""
    retry_after: float | None = None
    """Seconds to wait before retrying, when the provider said."""


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class Turn:
    """One model response, classified."""

    message: Message
    """The assistant message (empty parts for error bodies)."""
    ending: Ending
    """How the turn ended, decided from the provider's signal and the content together."""
    raw_reason: str | None = None
    """The provider's own stop field (``end_turn``, ``length``, ``SAFETY``, an HTTP status...)."""
    detail: str | None = None
    """More on the ending: Anthropic ``stop_details.category``, a filter name, a parse error."""
    usage: Usage = field(default_factory=Usage)
    """Token usage of this call."""
    model: str | None = None
    """The model that answered, as the provider named it."""
    response_id: str | None = None
    """The provider's response id."""
    error: ErrorInfo | None = None
    """The error the provider reported, for `Ending.ERROR` and error-derived endings."""
    api: str | None = None
    """The wire format the turn was read from."""

    @property
    def text(self) -> str:
        """The visible text (not thinking, not refusal)."""
        return self.message.text

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The client tool calls."""
        return self.message.tool_calls

    @property
    def thinking(self) -> tuple[ThinkingPart, ...]:
        """Thinking parts, progress updates included."""
        return self.message.thinking

    @property
    def refusal(self) -> str | None:
        """The structured refusal text, if any."""
        texts = [p.text for p in self.message.parts if isinstance(p, RefusalPart)]
        return "".join(texts) if texts else None


def assistant(parts: Sequence[Part]) -> Message:
    """An assistant message from parts (adapters' shorthand)."""
    return Message(role="assistant", parts=tuple(parts))
