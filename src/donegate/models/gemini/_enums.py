"""Proto3 JSON integer enums (``$alt=json;enum-encoding=int``) read back as their names.

Google's REST transports (google-cloud-aiplatform, google-ai-generativelanguage) ask for
integer enums, and the proto3 JSON mapping says a parser accepts an enum's name and its number
alike. So before anything reads a body, every enum field in it is turned into its name, and the
rest of the adapter only ever sees names.

The Gemini API (``generativelanguage``) and Vertex AI (``aiplatform``) number some enums
differently: ``FinishReason`` 9 is ``SPII`` on one and ``MALFORMED_FUNCTION_CALL`` on the other,
and ``HarmCategory`` differs throughout. A number is read in the dialect the body shows (only
Vertex sends ``createTime``, ``usageMetadata.trafficType`` and scored safety ratings). When the
dialect is unknown and the two disagree, the value is named as both: no reason table knows that
name, so the turn is an `error` with the ambiguity in its detail, never a guess. A number
neither API defines is named ``<Enum> <n>`` (an unknown reason, also an error).

Numbers are from googleapis ``google/ai/generativelanguage/v1beta`` and
``google/cloud/aiplatform/v1`` (``content.proto``, ``generative_service.proto``,
``prediction_service.proto``, ``safety.proto``, ``tool.proto``, ``openapi.proto``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from donegate.models._values import MAPPING, exact_int

__all__ = [
    "BLOCK_REASON",
    "FINISH_REASON",
    "HARM_CATEGORY",
    "Dialect",
    "Enum",
    "decode_request",
    "decode_response",
    "dialect_of",
]

Dialect = Literal["gemini", "vertex"]
"""``gemini``: the Gemini API (AI Studio); ``vertex``: Vertex AI."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Enum:
    """One proto enum: the numbers both APIs share, and those where each has its own."""

    name: str
    """The proto name, for values no table knows (``FinishReason 42``)."""
    shared: Mapping[int, str] = field(default_factory=dict)
    """Numbers that mean the same on both APIs."""
    gemini: Mapping[int, str] = field(default_factory=dict)
    """Numbers only the Gemini API defines, or defines its own way."""
    vertex: Mapping[int, str] = field(default_factory=dict)
    """Numbers only Vertex AI defines, or defines its own way."""

    def label(self, number: int, dialect: Dialect | None) -> str:
        """The name of `number` in `dialect`; both names when the dialect is unknown and the
        APIs disagree."""
        if number in self.shared:
            return self.shared[number]
        own = {"gemini": self.gemini, "vertex": self.vertex}
        if dialect is not None:
            return own[dialect].get(number, f"{self.name} {number}")
        g, v = self.gemini.get(number), self.vertex.get(number)
        if g is not None and v is not None and g != v:
            return f"{self.name} {number} ({g} on the Gemini API, {v} on Vertex AI)"
        return g or v or f"{self.name} {number}"


def _unspecified(prefix: str, *names: str) -> dict[int, str]:
    return {0: f"{prefix}_UNSPECIFIED", **{i: n for i, n in enumerate(names, start=1)}}


FINISH_REASON = Enum(
    name="FinishReason",
    shared=_unspecified("FINISH_REASON", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "OTHER"),
    gemini={
        6: "LANGUAGE",
        7: "BLOCKLIST",
        8: "PROHIBITED_CONTENT",
        9: "SPII",
        10: "MALFORMED_FUNCTION_CALL",
        11: "IMAGE_SAFETY",
        12: "UNEXPECTED_TOOL_CALL",
        13: "TOO_MANY_TOOL_CALLS",
        14: "IMAGE_PROHIBITED_CONTENT",
        15: "IMAGE_OTHER",
        16: "NO_IMAGE",
        17: "IMAGE_RECITATION",
    },
    vertex={
        6: "BLOCKLIST",
        7: "PROHIBITED_CONTENT",
        8: "SPII",
        9: "MALFORMED_FUNCTION_CALL",
        10: "MODEL_ARMOR",
    },
)
"""``Candidate.FinishReason``."""

BLOCK_REASON = Enum(
    name="BlockReason",
    shared=_unspecified("BLOCK_REASON", "SAFETY", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT"),
    gemini={5: "IMAGE_SAFETY"},
    vertex={5: "MODEL_ARMOR", 6: "JAILBREAK"},
)
"""``PromptFeedback.BlockReason`` (Vertex: ``BlockedReason``)."""

HARM_CATEGORY = Enum(
    name="HarmCategory",
    shared={0: "HARM_CATEGORY_UNSPECIFIED"},
    gemini={
        1: "HARM_CATEGORY_DEROGATORY",
        2: "HARM_CATEGORY_TOXICITY",
        3: "HARM_CATEGORY_VIOLENCE",
        4: "HARM_CATEGORY_SEXUAL",
        5: "HARM_CATEGORY_MEDICAL",
        6: "HARM_CATEGORY_DANGEROUS",
        7: "HARM_CATEGORY_HARASSMENT",
        8: "HARM_CATEGORY_HATE_SPEECH",
        9: "HARM_CATEGORY_SEXUALLY_EXPLICIT",
        10: "HARM_CATEGORY_DANGEROUS_CONTENT",
        11: "HARM_CATEGORY_CIVIC_INTEGRITY",
    },
    vertex={
        1: "HARM_CATEGORY_HATE_SPEECH",
        2: "HARM_CATEGORY_DANGEROUS_CONTENT",
        3: "HARM_CATEGORY_HARASSMENT",
        4: "HARM_CATEGORY_SEXUALLY_EXPLICIT",
        5: "HARM_CATEGORY_CIVIC_INTEGRITY",
        6: "HARM_CATEGORY_JAILBREAK",
    },
)
"""``HarmCategory``: numbered differently by the two APIs."""

HARM_PROBABILITY = Enum(
    name="HarmProbability",
    shared=_unspecified("HARM_PROBABILITY", "NEGLIGIBLE", "LOW", "MEDIUM", "HIGH"),
)
HARM_SEVERITY = Enum(
    name="HarmSeverity",
    shared=_unspecified(
        "HARM_SEVERITY",
        "HARM_SEVERITY_NEGLIGIBLE",
        "HARM_SEVERITY_LOW",
        "HARM_SEVERITY_MEDIUM",
        "HARM_SEVERITY_HIGH",
    ),
)
MODALITY = Enum(
    name="Modality",
    shared=_unspecified("MODALITY", "TEXT", "IMAGE", "VIDEO", "AUDIO", "DOCUMENT"),
)
"""``Modality`` of token counts (``ModalityTokenCount``)."""
TRAFFIC_TYPE = Enum(
    name="TrafficType",
    vertex={
        0: "TRAFFIC_TYPE_UNSPECIFIED",
        1: "ON_DEMAND",
        2: "PROVISIONED_THROUGHPUT",
        3: "ON_DEMAND_PRIORITY",
        4: "ON_DEMAND_FLEX",
    },
)
"""``UsageMetadata.TrafficType`` (Vertex only)."""
LANGUAGE = Enum(name="Language", shared=_unspecified("LANGUAGE", "PYTHON"))
"""``ExecutableCode.Language``."""
OUTCOME = Enum(
    name="Outcome",
    shared=_unspecified("OUTCOME", "OUTCOME_OK", "OUTCOME_FAILED", "OUTCOME_DEADLINE_EXCEEDED"),
)
"""``CodeExecutionResult.Outcome``."""
URL_RETRIEVAL_STATUS = Enum(
    name="UrlRetrievalStatus",
    shared=_unspecified(
        "URL_RETRIEVAL_STATUS", "URL_RETRIEVAL_STATUS_SUCCESS", "URL_RETRIEVAL_STATUS_ERROR"
    ),
    gemini={3: "URL_RETRIEVAL_STATUS_PAYWALL", 4: "URL_RETRIEVAL_STATUS_UNSAFE"},
)
"""``UrlMetadata.UrlRetrievalStatus``."""
CALLING_MODE = Enum(
    name="FunctionCallingConfig.Mode",
    shared=_unspecified("MODE", "AUTO", "ANY", "NONE"),
    gemini={4: "VALIDATED"},
    vertex={5: "VALIDATED"},
)
"""``FunctionCallingConfig.Mode`` (request side)."""
SCHEMA_TYPE = Enum(
    name="Type",
    shared=_unspecified("TYPE", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"),
    gemini={7: "NULL"},
)
"""``Schema.type`` of function declarations (request side)."""

_Tree = Any
"""A parsed JSON value."""


def _field(obj: _Tree, key: str, enum: Enum, dialect: Dialect | None) -> _Tree:
    """`obj` with ``obj[key]`` named, when it is an object holding a number there."""
    if not isinstance(obj, MAPPING):
        return obj
    number = exact_int(obj.get(key))
    if number is None:
        return obj
    return {**obj, key: enum.label(number, dialect)}


def _each(value: _Tree, fix: Callable[[_Tree], _Tree]) -> _Tree:
    """`fix` applied to every item of a list (anything else unchanged)."""
    return [fix(item) for item in value] if isinstance(value, list) else value


def _at(obj: _Tree, key: str, fix: Callable[[_Tree], _Tree]) -> _Tree:
    """`obj` with ``obj[key]`` replaced by ``fix(obj[key])``, when present."""
    if not isinstance(obj, MAPPING) or key not in obj:
        return obj
    return {**obj, key: fix(obj[key])}


def _ratings(value: _Tree, dialect: Dialect | None) -> _Tree:
    def one(rating: _Tree) -> _Tree:
        rating = _field(rating, "category", HARM_CATEGORY, dialect)
        rating = _field(rating, "probability", HARM_PROBABILITY, dialect)
        return _field(rating, "severity", HARM_SEVERITY, dialect)

    return _each(value, one)


def _part(part: _Tree, dialect: Dialect | None) -> _Tree:
    part = _at(part, "executableCode", lambda c: _field(c, "language", LANGUAGE, dialect))
    return _at(part, "codeExecutionResult", lambda r: _field(r, "outcome", OUTCOME, dialect))


def _candidate(cand: _Tree, dialect: Dialect | None) -> _Tree:
    cand = _field(cand, "finishReason", FINISH_REASON, dialect)
    cand = _at(cand, "safetyRatings", lambda r: _ratings(r, dialect))
    cand = _at(
        cand,
        "content",
        lambda c: _at(c, "parts", lambda ps: _each(ps, lambda p: _part(p, dialect))),
    )
    status = lambda m: _field(m, "urlRetrievalStatus", URL_RETRIEVAL_STATUS, dialect)  # noqa: E731
    return _at(
        cand, "urlContextMetadata", lambda u: _at(u, "urlMetadata", lambda m: _each(m, status))
    )


def _usage(usage: _Tree, dialect: Dialect | None) -> _Tree:
    usage = _field(usage, "trafficType", TRAFFIC_TYPE, "vertex")
    modality = lambda d: _field(d, "modality", MODALITY, dialect)  # noqa: E731
    for key in (
        "promptTokensDetails",
        "cacheTokensDetails",
        "candidatesTokensDetails",
        "toolUsePromptTokensDetails",
    ):
        usage = _at(usage, key, lambda ds: _each(ds, modality))
    return usage


def dialect_of(body: _Tree) -> Dialect | None:
    """``vertex`` when the body carries a field only Vertex AI sends, else None (unknown)."""
    if not isinstance(body, MAPPING):
        return None
    usage = body.get("usageMetadata")
    if "createTime" in body or (isinstance(usage, MAPPING) and "trafficType" in usage):
        return "vertex"
    candidates = body.get("candidates")
    for cand in candidates if isinstance(candidates, list) else ():
        ratings = cand.get("safetyRatings") if isinstance(cand, MAPPING) else None
        for r in ratings if isinstance(ratings, list) else ():
            if isinstance(r, MAPPING) and ("probabilityScore" in r or "severity" in r):
                return "vertex"
    return None


RESPONSE_ENUM_KEYS = (
    "finishReason",
    "category",
    "probability",
    "severity",
    "language",
    "outcome",
    "urlRetrievalStatus",
    "trafficType",
    "modality",
    "blockReason",
)
"""Every field `decode_response` names (each read by a ``_field`` below)."""

_ENUM_NUMBER = re.compile('"(?:' + "|".join(RESPONSE_ENUM_KEYS) + r')"\s*:\s*-?\d')


def may_hold_enum_numbers(text: str) -> bool:
    """False when the JSON `text` certainly holds no integer enum for `decode_response` to name
    (no ``"finishReason": 1`` and the like, and no ``\\u`` escape that could spell a key): then
    decoding its value would return it unchanged. One scan of the text instead of a tree walk."""
    return "\\u" in text or _ENUM_NUMBER.search(text) is not None


def decode_response(body: _Tree, dialect: Dialect | None = None) -> _Tree:
    """A ``GenerateContentResponse`` (or stream chunk) with every integer enum named.

    `dialect` is what an earlier chunk of the same stream showed; the body's own markers win.
    Anything that is not an object is returned as it is, for the parser to reject.
    """
    if not isinstance(body, MAPPING):
        return body
    dialect = dialect_of(body) or dialect
    body = _at(body, "candidates", lambda cs: _each(cs, lambda c: _candidate(c, dialect)))
    body = _at(
        body,
        "promptFeedback",
        lambda f: _at(
            _field(f, "blockReason", BLOCK_REASON, dialect),
            "safetyRatings",
            lambda r: _ratings(r, dialect),
        ),
    )
    return _at(body, "usageMetadata", lambda u: _usage(u, dialect))


def _schema(schema: _Tree) -> _Tree:
    """An OpenAPI ``Schema`` with its ``type`` (and those of nested schemas) named."""
    schema = _field(schema, "type", SCHEMA_TYPE, None)
    schema = _at(schema, "items", _schema)
    schema = _at(schema, "anyOf", lambda xs: _each(xs, _schema))
    return _at(
        schema,
        "properties",
        lambda ps: {k: _schema(v) for k, v in ps.items()} if isinstance(ps, MAPPING) else ps,
    )


def decode_request(body: _Tree) -> _Tree:
    """A ``GenerateContentRequest`` with the enums the adapter reads named: the function
    calling mode and the declared parameter schemas' types."""
    if not isinstance(body, MAPPING):
        return body
    mode = lambda c: _field(c, "mode", CALLING_MODE, None)  # noqa: E731
    body = _at(body, "toolConfig", lambda t: _at(t, "functionCallingConfig", mode))

    def declaration(decl: _Tree) -> _Tree:
        return _at(decl, "parameters", _schema)

    def tool(t: _Tree) -> _Tree:
        return _at(t, "functionDeclarations", lambda ds: _each(ds, declaration))

    return _at(body, "tools", lambda ts: _each(ts, tool))
