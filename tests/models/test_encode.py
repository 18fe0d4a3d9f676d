"""Bodies sent as bytes: the very bytes the SDK makes from the dict, each message encoded once."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import httpx2
import openai
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from donegate.messages import Message, TextPart, ToolCall, ToolResult
from donegate.models import _encode
from donegate.models._cache import HistoryCache
from donegate.models.base import ModelRequest, ModelSettings, ToolSpec
from donegate.models.openai_chat import WIRE
from donegate.models.sdk import OpenAIChatModel, _takes_content

TEXT_TURN = {
    "id": "c",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
    ],
}
TOOL = ToolSpec(
    name="get_order",
    description="Look up an order — by id.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}},
)


class Extra(pydantic.BaseModel):
    effort: str = "low"
    budget: int | None = None


def capturing_client() -> tuple[openai.OpenAI, list[httpx2.Request]]:
    seen: list[httpx2.Request] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json=TEXT_TURN)

    http = httpx2.Client(transport=httpx2.MockTransport(handle))
    return openai.OpenAI(api_key="k", http_client=http), seen


def history(turns: int, text: str = "ordre n° 55219 ✓") -> tuple[Message, ...]:
    out = [Message.system("be brief"), Message.user(text)]
    for i in range(turns):
        call = ToolCall.from_args(id=f"c{i}", name="get_order", arguments={"order_id": f"{i}é"})
        out.append(Message(role="assistant", parts=(TextPart(text=f"t{i} «"), call)))
        out.append(
            Message.tool_results([ToolResult(call_id=f"c{i}", name="get_order", content="ok")])
        )
    return tuple(out)


REQUESTS = [
    ModelRequest(model="x", messages=history(0)),
    ModelRequest(model="x", messages=history(3), tools=(TOOL,)),
    ModelRequest(
        model="x",
        messages=history(2),
        tools=(TOOL,),
        settings=ModelSettings(
            max_tokens=64,
            temperature=0.5,
            stop=("END",),
            tool_choice="get_order",
            parallel_tool_calls=False,
            extra_body={"reasoning": Extra(effort="high"), "at": datetime(2026, 1, 2, tzinfo=UTC)},
        ),
    ),
    ModelRequest(model="x", messages=history(1), tools=(TOOL,), stream=True),
    ModelRequest(
        model="x", messages=history(1), settings=ModelSettings(extra_body={"model": "mine"})
    ),
]


@pytest.mark.parametrize("request_", REQUESTS)
def test_the_bytes_sent_are_the_bytes_the_sdk_makes_from_the_rendered_dict(
    request_: ModelRequest,
) -> None:
    sdk, seen = capturing_client()
    sdk.post(
        "/chat/completions",
        body=WIRE.render_request(replace(request_, model="gpt-x")),
        cast_to=httpx2.Response,
    )
    by_sdk = seen[-1].content
    assert WIRE.encode_request(request_, model="gpt-x") == by_sdk
    model = OpenAIChatModel(sdk, "gpt-x")
    if not request_.stream:
        assert model.request(request_).text == "ok"
        assert seen[-1].content == by_sdk
        assert seen[-1].headers["content-type"] == "application/json"


@pytest.mark.parametrize("name", ["gpt-x", 'a "quoted" \\ name, é \u2028'])
def test_a_request_with_no_settings_set_is_the_sdks_bytes_too(name: str) -> None:
    # no setting set: the body is written at once, not field by field (the usual request)
    sdk, seen = capturing_client()
    for request_ in (
        ModelRequest(model="x", messages=history(1)),
        ModelRequest(model="x", messages=history(2), tools=(TOOL,)),
    ):
        body = WIRE.render_request(replace(request_, model=name))
        sdk.post("/chat/completions", body=body, cast_to=httpx2.Response)
        assert WIRE.encode_request(request_, model=name) == seen[-1].content


def test_a_growing_and_an_edited_transcript_encode_as_a_whole_one_would() -> None:
    full = history(6)
    for n in range(1, len(full) + 1):
        request = ModelRequest(model="m", messages=full[:n], tools=(TOOL,))
        assert json.loads(WIRE.encode_request(request)) == WIRE.render_request(request)
    edited = (*full[:3], Message.user("replaced"), *full[4:])
    request = ModelRequest(model="m", messages=edited, tools=(TOOL,))
    assert json.loads(WIRE.encode_request(request)) == WIRE.render_request(request)


def test_each_message_is_encoded_once_over_a_growing_run(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = HistoryCache(lambda m: [{"role": m.role, "text": m.text}])
    encoded: list[Any] = []
    real = _encode.dumps

    def counting(value: Any) -> bytes:
        encoded.append(value)
        return real(value)

    monkeypatch.setattr("donegate.models._cache.dumps", counting)
    full = history(4)
    for n in range(1, len(full) + 1):
        text = cache.encode(full[:n]).text
        assert json.loads(text) == [{"role": m.role, "text": m.text} for m in full[:n]]
    assert [item["text"] for item in encoded] == [m.text for m in full]
    cache.render(full)  # a render after encoding keeps what was encoded
    assert cache.encode(full).text == b"[" + b",".join(real(i) for i in cache.render(full)) + b"]"
    assert len(encoded) == len(full)


texts = st.text(min_size=0, max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), texts), min_size=1, max_size=8))
def test_any_transcript_encodes_to_the_json_of_its_render(turns: list[tuple[str, str]]) -> None:
    messages = tuple(
        Message.user(t) if role == "user" else Message(role="assistant", parts=(TextPart(text=t),))
        for role, t in turns
    )
    request = ModelRequest(model="m", messages=messages)
    body = WIRE.render_request(request)
    compact = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    assert WIRE.encode_request(request) == compact


def test_nan_is_refused_as_the_sdk_refuses_it() -> None:
    request = ModelRequest(
        model="m", messages=history(0), settings=ModelSettings(temperature=float("nan"))
    )
    with pytest.raises(ValueError, match="JSON compliant"):
        WIRE.encode_request(request)


class OldClient:
    """An SDK release whose ``post`` has no ``content=``: it gets the dict to encode."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def post(self, path: str, *, cast_to: type[Any], body: dict[str, Any]) -> httpx2.Response:
        self.bodies.append(body)
        return httpx2.Response(200, json=TEXT_TURN)


def test_a_client_without_content_gets_the_rendered_dict() -> None:
    client = OldClient()
    assert not _takes_content(client)
    assert _takes_content(capturing_client()[0])
    model = OpenAIChatModel(client, "gpt-x")
    request = REQUESTS[1]
    assert model.request(request).text == "ok"
    assert client.bodies == [WIRE.render_request(replace(request, model="gpt-x"))]


def test_an_azure_client_gets_the_dict_and_its_deployment_url() -> None:
    seen: list[httpx2.Request] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json=TEXT_TURN)

    azure = openai.AzureOpenAI(
        api_key="k",
        api_version="2024-10-21",
        azure_endpoint="https://example.openai.azure.com",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handle)),
    )
    assert not _takes_content(azure)
    assert OpenAIChatModel(azure, "my-deployment").request(REQUESTS[1]).text == "ok"
    assert seen[-1].url.path == "/openai/deployments/my-deployment/chat/completions"
    assert json.loads(seen[-1].content)["model"] == "my-deployment"


def test_a_subclass_of_the_plain_client_gets_the_dict() -> None:
    class Mine(openai.OpenAI):
        pass

    assert not _takes_content(Mine(api_key="k"))
