"""`infer_model`: a `Model` from a Model, a ``"provider:model"`` string, or an SDK client."""

from __future__ import annotations

import importlib
import os
from typing import Any, TypeGuard

from donegate._extras import require
from donegate.errors import MissingExtra, UserError
from donegate.models.base import Model

__all__ = ["PROVIDER_SECRET_ENV", "SCRIPT_SCHEME", "infer_model"]

SCRIPT_SCHEME = "script:"
"""The prefix of a model that plays a script file (``script:FILE``) instead of calling one."""

# provider prefix -> (module, class, SDK module, client class, extra)
_PROVIDERS: dict[str, tuple[str, str, str, str, str]] = {
    "openai": ("donegate.models.sdk", "OpenAIChatModel", "openai", "OpenAI", "openai"),
    "openai-chat": ("donegate.models.sdk", "OpenAIChatModel", "openai", "OpenAI", "openai"),
    "openai-responses": (
        "donegate.models.sdk",
        "OpenAIResponsesModel",
        "openai",
        "OpenAI",
        "openai",
    ),
    "anthropic": ("donegate.models.sdk", "AnthropicModel", "anthropic", "Anthropic", "anthropic"),
    "google": ("donegate.models.google", "GeminiModel", "google.genai", "Client", "gemini"),
    "gemini": ("donegate.models.google", "GeminiModel", "google.genai", "Client", "gemini"),
}

# provider prefix -> the environment variables its SDK reads an API key from
_OPENAI_KEYS = ("OPENAI_API_KEY",)
_GEMINI_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
_KEYS: dict[str, tuple[str, ...]] = {
    "openai": _OPENAI_KEYS,
    "openai-chat": _OPENAI_KEYS,
    "openai-responses": _OPENAI_KEYS,
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "google": _GEMINI_KEYS,
    "gemini": _GEMINI_KEYS,
}
PROVIDER_SECRET_ENV = frozenset(
    {name for names in _KEYS.values() for name in names}
    | {"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"}
    | {"MISTRAL_API_KEY", "CO_API_KEY", "COHERE_API_KEY", "AZURE_OPENAI_API_KEY"}
)
"""Every provider credential variable: checks and ``run_command`` never get them
(`donegate.harness.custody.child_env`)."""

# provider prefix -> the variable that switches it to keyless auth (Vertex AI: Google ADC)
_KEYLESS = {"google": "GOOGLE_GENAI_USE_VERTEXAI", "gemini": "GOOGLE_GENAI_USE_VERTEXAI"}

# SDK package of a client object -> provider prefix
_CLIENT_PACKAGES = {"openai": "openai", "anthropic": "anthropic", "google": "google"}


def _is_model(value: Any) -> TypeGuard[Model]:
    """Duck-typed `Model` check (a runtime Protocol isinstance costs ~15 us per run)."""
    return (
        callable(getattr(value, "request", None))
        and callable(getattr(value, "arequest", None))
        and callable(getattr(value, "astream", None))
    )


def _model_class(provider: str) -> Any:
    module, cls, *_ = _PROVIDERS[provider]
    return getattr(importlib.import_module(module), cls)


def _check_key(model: str, provider: str) -> None:
    """A missing API key is one line naming the variable, not the SDK's error at first call."""
    keyless = _KEYLESS.get(provider)
    if keyless and os.environ.get(keyless, "").lower() in ("1", "true", "yes"):
        return
    names = _KEYS.get(provider, ())
    if not names or any(os.environ.get(n) for n in names):
        return
    if provider in ("google", "gemini"):
        wanted = " or ".join(names)
    else:
        wanted = f"{names[0]} (or {', '.join(names[1:])})" if len(names) > 1 else names[0]
    hint = " (any value, for a compatible server at OPENAI_BASE_URL that takes none)"
    suffix = hint if names == _OPENAI_KEYS else ""
    raise UserError(f"{model} needs an API key: set {wanted}{suffix}")


def infer_model(model: Model | str | Any, *, model_name: str | None = None) -> Model:
    """Resolve `model` to a `Model`.

    ``"openai:gpt-4.1"``, ``"anthropic:claude-sonnet-4-5"``, ``"google:gemini-2.5-flash"``
    build the official SDK client from the environment (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``
    for any compatible server, ...). ``"script:FILE"`` is a fresh player of a script file
    (`donegate.testing.player.script_model`), on every path that names a model: the library,
    the CLI, the worker, preflight. An SDK client instance is wrapped as it is; pass
    `model_name`.
    """
    if _is_model(model):
        return model
    if isinstance(model, str) and model.startswith(SCRIPT_SCHEME):
        path = model.removeprefix(SCRIPT_SCHEME)
        if not path:
            raise UserError(f"{model!r}: a script model names its file (script:FILE)")
        # by name, like the SDK adapters: only a script model loads the test kit
        player = importlib.import_module("donegate.testing.player")
        return player.script_model(path)  # type: ignore[no-any-return]
    if isinstance(model, str):
        provider, sep, name = model.partition(":")
        if not sep or not name or provider not in _PROVIDERS:
            raise UserError(
                f"unknown model {model!r}; expected 'provider:model' with provider one of "
                f"{', '.join(sorted(_PROVIDERS))}"
            )
        _, _, sdk, client_cls, extra = _PROVIDERS[provider]
        require(extra)  # every missing package of the extra, in one line
        _check_key(model, provider)
        try:
            client = getattr(importlib.import_module(sdk), client_cls)()
        except ImportError:
            raise MissingExtra(sdk, extra) from None
        except Exception as exc:  # each SDK has its own error for a client it cannot build
            message = " ".join(str(exc).split())[:300]
            raise UserError(f"{model}: cannot create the {provider} client: {message}") from None
        return _model_class(provider)(client, name)  # type: ignore[no-any-return]
    package = type(model).__module__.split(".")[0]
    client_provider = _CLIENT_PACKAGES.get(package)
    if client_provider is None:
        raise UserError(f"cannot use {type(model).__name__} as a model")
    if not model_name:
        raise UserError(f"model_name is required with a {type(model).__name__} client")
    return _model_class(client_provider)(model, model_name)  # type: ignore[no-any-return]
