"""Gemini bodies with proto3 integer enums (``$alt=json;enum-encoding=int``), body and stream.

Numbers follow googleapis' ``google/ai/generativelanguage/v1beta`` (the Gemini API) and
``google/cloud/aiplatform/v1`` (Vertex AI) protos; the fixtures follow the documented
``GenerateContentResponse`` shape as the google-cloud-aiplatform REST transport receives it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from donegate import classify
from donegate.errors import WireFormatError
from donegate.messages import Ending
from donegate.models._rules import CUT_OFF, NO_REASON
from donegate.models.gemini import WIRE
from donegate.models.gemini._enums import (
    BLOCK_REASON,
    FINISH_REASON,
    HARM_CATEGORY,
    decode_response,
    dialect_of,
)
from donegate.models.gemini._parse import signal

VERTEX_MARK = {"createTime": "2025-12-19T23:45:36.565494Z"}


def body(reason: Any = 1, *, vertex: bool = False, **candidate: Any) -> dict[str, Any]:
    """A ``GenerateContentResponse`` with integer enums, as the REST transport receives it."""
    cand: dict[str, Any] = {
        "content": {"role": "model", "parts": [{"text": "I see food, and I eat it."}]},
        "avgLogprobs": -4.18,
        **candidate,
    }
    if reason is not None:
        cand["finishReason"] = reason
    out: dict[str, Any] = {
        "candidates": [cand],
        "usageMetadata": {
            "promptTokenCount": 11,
            "candidatesTokenCount": 17,
            "totalTokenCount": 28,
            "promptTokensDetails": [{"modality": 1, "tokenCount": 11}],
            "candidatesTokensDetails": [{"modality": 1, "tokenCount": 17}],
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "oONFafbBIrrygLUP36rmIA",
    }
    if vertex:
        out.update(VERTEX_MARK)
        out["usageMetadata"]["trafficType"] = 1
    return out


def sse(*chunks: Any) -> str:
    return "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks)


# -- finish reasons ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "ending"),
    [
        (1, Ending.COMPLETE),
        (2, Ending.TRUNCATED),
        (3, Ending.FILTERED),
        (4, Ending.FILTERED),
        (5, Ending.ERROR),  # OTHER
        (0, Ending.ERROR),  # FINISH_REASON_UNSPECIFIED
    ],
)
@pytest.mark.parametrize("vertex", [False, True], ids=["gemini-api", "vertex"])
def test_numbers_both_apis_share(number: int, ending: Ending, vertex: bool) -> None:
    turn = WIRE.parse_response(body(number, vertex=vertex))
    assert turn.ending is ending
    assert turn.raw_reason == FINISH_REASON.shared[number]


def test_the_corpus_case_vertex_finish_reason_1_is_stop() -> None:
    turn = classify("gemini", body(1, vertex=True))
    assert (turn.ending, turn.raw_reason) == (Ending.COMPLETE, "STOP")
    assert turn.text == "I see food, and I eat it."
    assert turn.usage.input_tokens == 11


@pytest.mark.parametrize(
    ("number", "name", "ending"),
    [
        (6, "BLOCKLIST", Ending.FILTERED),
        (8, "SPII", Ending.FILTERED),
        (9, "MALFORMED_FUNCTION_CALL", Ending.MALFORMED_TOOL_CALL),
        (10, "MODEL_ARMOR", Ending.FILTERED),
    ],
)
def test_vertex_numbers_are_read_in_the_vertex_table(
    number: int, name: str, ending: Ending
) -> None:
    turn = WIRE.parse_response(body(number, vertex=True))
    assert (turn.raw_reason, turn.ending) == (name, ending)


@pytest.mark.parametrize(
    ("number", "name", "ending"),
    [
        (12, "UNEXPECTED_TOOL_CALL", Ending.MALFORMED_TOOL_CALL),
        (13, "TOO_MANY_TOOL_CALLS", Ending.MALFORMED_TOOL_CALL),
        (11, "IMAGE_SAFETY", Ending.FILTERED),
        (17, "IMAGE_RECITATION", Ending.FILTERED),
        (16, "NO_IMAGE", Ending.ERROR),
    ],
)
def test_numbers_only_the_gemini_api_defines_need_no_dialect(
    number: int, name: str, ending: Ending
) -> None:
    turn = WIRE.parse_response(body(number))
    assert (turn.raw_reason, turn.ending) == (name, ending)


def test_a_number_the_apis_disagree_on_is_an_error_naming_both() -> None:
    """9 is SPII (filtered) on the Gemini API and MALFORMED_FUNCTION_CALL on Vertex: no guess."""
    turn = WIRE.parse_response(body(9))
    assert turn.ending is Ending.ERROR
    assert turn.detail is not None
    assert "SPII on the Gemini API" in turn.detail
    assert "MALFORMED_FUNCTION_CALL on Vertex AI" in turn.detail


def test_a_number_no_api_defines_is_an_unknown_reason() -> None:
    turn = WIRE.parse_response(body(42, vertex=True))
    assert (turn.ending, turn.raw_reason) == (Ending.ERROR, "FinishReason 42")


def test_malformed_call_keeps_its_finish_message_as_detail() -> None:
    turn = WIRE.parse_response(body(9, vertex=True, finishMessage="Malformed function call: x"))
    assert (turn.ending, turn.detail) == (Ending.MALFORMED_TOOL_CALL, "Malformed function call: x")


@pytest.mark.parametrize("bad", [True, 1.0, [1], {"v": 1}])
def test_values_that_are_no_enum_still_name_the_field(bad: Any) -> None:
    with pytest.raises(WireFormatError, match=r"candidates\[0\]\.finishReason"):
        WIRE.parse_response(body(bad))


# -- prompt feedback and safety ratings --------------------------------------------------------


def test_a_blocked_prompt_with_integer_block_reason_and_categories() -> None:
    blocked = {
        "promptFeedback": {
            "blockReason": 1,
            "safetyRatings": [
                {"category": 8, "probability": 4, "blocked": True},
                {"category": 7, "probability": 1},
            ],
        },
        "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
    }
    turn = WIRE.parse_response(blocked)
    assert (turn.ending, turn.raw_reason) == (Ending.FILTERED, "SAFETY")
    assert turn.detail == "SAFETY: HARM_CATEGORY_HATE_SPEECH"


def test_vertex_block_reasons_and_categories_use_vertex_numbers() -> None:
    blocked = {
        **VERTEX_MARK,
        "promptFeedback": {
            "blockReason": 5,
            "safetyRatings": [{"category": 1, "probability": 4, "blocked": True}],
        },
    }
    turn = WIRE.parse_response(blocked)
    assert (turn.ending, turn.raw_reason) == (Ending.FILTERED, "MODEL_ARMOR")
    assert turn.detail == "MODEL_ARMOR: HARM_CATEGORY_HATE_SPEECH"


def test_a_safety_stop_names_the_blocking_category() -> None:
    ratings = [
        {"category": 3, "probability": 4, "probabilityScore": 0.9, "severity": 3, "blocked": True}
    ]
    turn = WIRE.parse_response(body(3, safetyRatings=ratings))  # scored ratings: Vertex
    assert (turn.ending, turn.detail) == (Ending.FILTERED, "SAFETY: HARM_CATEGORY_HARASSMENT")


def test_every_enum_field_is_named() -> None:
    raw = {
        **body(1, vertex=True),
        "promptFeedback": {"safetyRatings": [{"category": 2, "probability": 1, "severity": 1}]},
    }
    raw["candidates"][0]["safetyRatings"] = [{"category": 4, "probability": 2, "severity": 2}]
    raw["candidates"][0]["content"]["parts"] += [
        {"executableCode": {"language": 1, "code": "print(4)"}},
        {"codeExecutionResult": {"outcome": 1, "output": "4\n"}},
    ]
    raw["candidates"][0]["urlContextMetadata"] = {
        "urlMetadata": [{"retrievedUrl": "https://example.org", "urlRetrievalStatus": 1}]
    }
    raw["usageMetadata"]["cacheTokensDetails"] = [{"modality": 2, "tokenCount": 3}]
    named = decode_response(raw)
    cand = named["candidates"][0]
    assert cand["finishReason"] == "STOP"
    assert cand["safetyRatings"] == [
        {
            "category": "HARM_CATEGORY_SEXUALLY_EXPLICIT",
            "probability": "LOW",
            "severity": "HARM_SEVERITY_LOW",
        }
    ]
    assert cand["content"]["parts"][1]["executableCode"]["language"] == "PYTHON"
    assert cand["content"]["parts"][2]["codeExecutionResult"]["outcome"] == "OUTCOME_OK"
    status = cand["urlContextMetadata"]["urlMetadata"][0]["urlRetrievalStatus"]
    assert status == "URL_RETRIEVAL_STATUS_SUCCESS"
    assert named["promptFeedback"]["safetyRatings"][0]["category"] == (
        "HARM_CATEGORY_DANGEROUS_CONTENT"
    )
    usage = named["usageMetadata"]
    assert usage["trafficType"] == "ON_DEMAND"
    assert usage["promptTokensDetails"] == [{"modality": "TEXT", "tokenCount": 11}]
    assert usage["cacheTokensDetails"] == [{"modality": "IMAGE", "tokenCount": 3}]
    assert raw["candidates"][0]["finishReason"] == 1  # the caller's body is left as it was


def test_named_bodies_pass_through_unchanged() -> None:
    named = body("STOP")
    named["usageMetadata"]["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": 11}]
    named["usageMetadata"]["candidatesTokensDetails"] = [{"modality": "TEXT", "tokenCount": 17}]
    assert decode_response(named) == named
    assert dialect_of(named) is None and dialect_of(body(vertex=True)) == "vertex"


@given(st.sampled_from(["gemini", "vertex"]), st.integers(min_value=-3, max_value=40))
def test_a_number_classifies_like_its_name(dialect: str, number: int) -> None:
    """Property: in a known dialect, ``finishReason: n`` is read exactly as its name is."""
    table = {**FINISH_REASON.shared, **getattr(FINISH_REASON, dialect)}
    turn = WIRE.parse_response(body(number, vertex=dialect == "vertex"))
    if dialect == "gemini":  # the Gemini API has no marker: only unambiguous numbers decode
        g, v = FINISH_REASON.gemini.get(number), FINISH_REASON.vertex.get(number)
        if number not in FINISH_REASON.shared and g is not None and v is not None and g != v:
            assert turn.ending is Ending.ERROR
            return
    if number in table:
        named = WIRE.parse_response(body(table[number], vertex=dialect == "vertex"))
        assert (turn.ending, turn.raw_reason) == (named.ending, named.raw_reason)
    else:
        assert turn.ending is Ending.ERROR


def test_every_named_finish_reason_is_one_the_reason_table_knows() -> None:
    """A name the enum tables produce is never misread as an unknown reason by accident."""
    errors = {"FINISH_REASON_UNSPECIFIED", "OTHER", "IMAGE_OTHER", "NO_IMAGE"}
    for table in (FINISH_REASON.shared, FINISH_REASON.gemini, FINISH_REASON.vertex):
        for name in table.values():
            assert (signal(name) is Ending.ERROR) == (name in errors), name
    assert BLOCK_REASON.label(6, "vertex") == "JAILBREAK"
    assert HARM_CATEGORY.label(7, None) == "HARM_CATEGORY_HARASSMENT"
    assert "Gemini API" in HARM_CATEGORY.label(3, None)


# -- streams ------------------------------------------------------------------------------------


def test_the_corpus_case_an_sse_stream_with_integer_enums() -> None:
    chunk = body(1, vertex=True)
    turn = WIRE.parse_stream(sse(chunk))
    assert (turn.ending, turn.raw_reason) == (Ending.COMPLETE, "STOP")


def test_a_stream_remembers_the_dialect_an_earlier_chunk_showed() -> None:
    first = {**body(None, vertex=True)}
    last = {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": 9}]}
    turn = WIRE.parse_stream(sse(first, last))
    assert (turn.ending, turn.raw_reason) == (Ending.MALFORMED_TOOL_CALL, "MALFORMED_FUNCTION_CALL")


def test_a_json_array_stream_with_integer_enums() -> None:
    text = json.dumps([body(None), body(2)])
    assert WIRE.parse_stream(text).ending is Ending.TRUNCATED
    assert WIRE.parse_stream(text).raw_reason == "MAX_TOKENS"
    assert WIRE.parse_response([body(None), body(1)]).ending is Ending.COMPLETE


def test_a_closed_array_without_reason_is_an_error_and_a_cut_one_truncated() -> None:
    closed = json.dumps([body(None), body(None)])
    turn = WIRE.parse_stream(closed)
    assert (turn.ending, turn.detail) == (Ending.ERROR, NO_REASON)
    turn = WIRE.parse_stream(closed[:-1])
    assert (turn.ending, turn.detail) == (Ending.TRUNCATED, CUT_OFF)
    half = closed[: len(closed) // 2 + 40]  # cut inside the second chunk
    assert WIRE.parse_stream(half).ending is Ending.TRUNCATED
    assert WIRE.parse_response([body(None)]).detail == NO_REASON


# -- requests (emulator logs from REST clients) ------------------------------------------------


def test_requests_with_integer_modes_and_schema_types() -> None:
    request = {
        "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "parameters": {
                            "type": 6,
                            "properties": {
                                "city": {"type": 1},
                                "days": {"type": 5, "items": {"type": 3}},
                            },
                        },
                    }
                ]
            }
        ],
        "toolConfig": {
            "functionCallingConfig": {"mode": 2, "allowedFunctionNames": ["get_weather"]}
        },
    }
    parsed = WIRE.parse_request(request)
    assert parsed.settings.tool_choice == "get_weather"
    (tool,) = parsed.tools
    assert tool.parameters["type"] == "OBJECT"
    assert tool.parameters["properties"]["city"] == {"type": "STRING"}
    assert tool.parameters["properties"]["days"] == {"type": "ARRAY", "items": {"type": "INTEGER"}}
    request["toolConfig"] = {"functionCallingConfig": {"mode": 3}}
    assert WIRE.parse_request(request).settings.tool_choice == "none"
