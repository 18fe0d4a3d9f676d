"""SDK-backed models: the official client sends, donegate's adapter classifies; errors are turns."""

from __future__ import annotations

import json

import anthropic
import httpx2
import openai
import pytest

from donegate.errors import UserError
from donegate.messages import Ending, Message
from donegate.models.base import ModelRequest, ModelSettings
from donegate.models.infer import infer_model
from donegate.models.sdk import AnthropicModel, OpenAIChatModel

REQUEST = ModelRequest(model="ignored", messages=(Message.user("hi"),))


def openai_client(handler: object, **kwargs: object) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="k",
        base_url="http://test/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),  # type: ignore[arg-type]
        **kwargs,  # type: ignore[arg-type]
    )


def test_the_body_sent_is_the_adapters_rendering_with_the_models_name() -> None:
    seen: list[dict[str, object]] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(json.loads(request.content))
        return httpx2.Response(
            200,
            json={"choices": [{"finish_reason": "length", "message": {"content": "Half"}}]},
        )

    model = OpenAIChatModel(openai_client(handle), "gpt-4o-mini")
    request = ModelRequest(
        model="x", messages=(Message.user("hi"),), settings=ModelSettings(max_tokens=5)
    )
    turn = model.request(request)
    assert turn.ending is Ending.TRUNCATED
    assert seen == [
        {
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "hi"}],
            "max_completion_tokens": 5,
        }
    ]
    assert model.name == "openai:gpt-4o-mini"


def test_a_rate_limit_is_retried_by_the_sdk_honouring_retry_after() -> None:
    calls: list[float] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        calls.append(1)
        if len(calls) == 1:
            return httpx2.Response(
                429,
                json={"error": {"message": "slow down", "type": "requests"}},
                headers={"retry-after": "0"},
            )
        return httpx2.Response(
            200, json={"choices": [{"finish_reason": "stop", "message": {"content": "ok"}}]}
        )

    turn = OpenAIChatModel(openai_client(handle), "m").request(REQUEST)
    assert (turn.ending, len(calls)) == (Ending.COMPLETE, 2)


def test_an_error_status_the_sdk_gives_up_on_becomes_an_error_turn() -> None:
    def handle(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            400,
            json={
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 210000 tokens",
                },
            },
        )

    client = anthropic.Anthropic(
        api_key="k",
        base_url="http://test",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handle)),
    )
    turn = AnthropicModel(client, "claude-sonnet-4-5").request(REQUEST)
    assert turn.ending is Ending.CONTEXT_EXCEEDED
    assert turn.error is not None and turn.error.status == 400


def test_a_dropped_connection_becomes_an_error_turn_after_retries() -> None:
    attempts: list[int] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        attempts.append(1)
        raise httpx2.ConnectError("connection reset", request=request)

    turn = OpenAIChatModel(openai_client(handle, max_retries=1), "m").request(REQUEST)
    assert turn.ending is Ending.ERROR
    assert turn.error is not None and turn.error.type == "APIConnectionError"
    assert len(attempts) == 2


def test_infer_model_reads_provider_strings_and_clients() -> None:
    client = openai_client(lambda r: httpx2.Response(500))
    model = infer_model(client, model_name="gpt-4o-mini")
    assert isinstance(model, OpenAIChatModel)
    assert model.name == "openai:gpt-4o-mini"
    with pytest.raises(UserError, match="model_name is required"):
        infer_model(client)
    with pytest.raises(UserError, match="unknown model 'nope:x'"):
        infer_model("nope:x")
    with pytest.raises(UserError, match="cannot use int"):
        infer_model(3)


def test_the_old_stainless_name_resolves_to_sdk_client_model_with_a_deprecation_warning() -> None:
    from donegate.models import sdk

    with pytest.warns(DeprecationWarning, match="use SDKClientModel"):
        old = sdk.StainlessModel
    assert old is sdk.SDKClientModel
    assert issubclass(OpenAIChatModel, sdk.SDKClientModel)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        sdk.Nope  # type: ignore[attr-defined]  # noqa: B018
