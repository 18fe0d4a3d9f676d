"""`infer_model`: a `Model` from a Model, a ``"provider:model"`` string, or an SDK client."""

from __future__ import annotations

import importlib
import os
from typing import Any, TypeGuard

from donegate._extras import require
from donegate.errors import MissingExtra, UserError
from donegate.models.base import Model
from donegate.models.providers import (
    PROVIDER_SECRET_ENV,
    Provider,
    by_prefix,
    client_provider,
    prefixes,
)

__all__ = ["PROVIDER_SECRET_ENV", "SCRIPT_SCHEME", "infer_model"]

SCRIPT_SCHEME = "script:"
"""The prefix of a model that plays a script file (``script:FILE``) instead of calling one."""

# the table's rows by prefix: `donegate.models.providers` is the one list of providers (a row
# with prefixes always names its model class, SDK client and extra: `Provider.__post_init__`)
_PROVIDERS: dict[str, Provider] = {
    prefix: row for prefix in prefixes() if (row := by_prefix(prefix)) is not None
}


def _is_model(value: Any) -> TypeGuard[Model]:
    """Duck-typed `Model` check (a runtime Protocol isinstance costs ~15 us per run)."""
    return (
        callable(getattr(value, "request", None))
        and callable(getattr(value, "arequest", None))
        and callable(getattr(value, "astream", None))
    )


def _model_class(row: Provider) -> Any:
    assert row.model_class is not None  # every row with prefixes has one
    module, cls = row.model_class
    return getattr(importlib.import_module(module), cls)


def _check_key(model: str, row: Provider) -> None:
    """A missing API key is one line naming the variable, not the SDK's error at first call."""
    keyless = row.keyless
    if keyless and os.environ.get(keyless, "").lower() in ("1", "true", "yes"):
        return
    names = row.keys
    if not names or any(os.environ.get(n) for n in names):
        return
    if row.keys_alike:
        wanted = " or ".join(names)
    else:
        wanted = f"{names[0]} (or {', '.join(names[1:])})" if len(names) > 1 else names[0]
    raise UserError(f"{model} needs an API key: set {wanted}{row.key_hint}")


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
        row = _PROVIDERS[provider]
        assert row.sdk is not None and row.extra is not None  # every inferable row has both
        (sdk, client_cls), extra = row.sdk, row.extra
        require(extra)  # every missing package of the extra, in one line
        _check_key(model, row)
        try:
            client = getattr(importlib.import_module(sdk), client_cls)()
        except ImportError:
            raise MissingExtra(sdk, extra) from None
        except Exception as exc:  # each SDK has its own error for a client it cannot build
            message = " ".join(str(exc).split())[:300]
            raise UserError(f"{model}: cannot create the {provider} client: {message}") from None
        return _model_class(row)(client, name)  # type: ignore[no-any-return]
    package = type(model).__module__.split(".")[0]
    wrapping = client_provider(package)
    if wrapping is None:
        raise UserError(f"cannot use {type(model).__name__} as a model")
    if not model_name:
        raise UserError(f"model_name is required with a {type(model).__name__} client")
    return _model_class(wrapping)(model, model_name)  # type: ignore[no-any-return]
