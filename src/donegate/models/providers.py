"""The provider table: every wire format donegate reads, and what each needs around it.

One `Provider` row per wire format holds its ``infer_model`` prefixes, its adapter module, the
donegate model class and SDK client ``infer_model`` builds, the extra that installs the SDK, the
variables holding its credentials, and the paths and model names the emulator serves for it.
Everything that lists providers derives from `PROVIDERS`: `donegate.models.infer` (prefixes,
keys, clients), `donegate.models.registry` (wire formats), custody's secret list
(`PROVIDER_SECRET_ENV`), the emulator's routes and the test kit's SDK clients.

Plain data and standard-library imports only: importable before (and without) any SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "PROVIDERS",
    "PROVIDER_SECRET_ENV",
    "Provider",
    "by_prefix",
    "by_wire",
    "client_provider",
    "prefixes",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Provider:
    """One wire format and what donegate knows around it."""

    wire: str
    """The wire format's name (``donegate classify --api``, `donegate.models.registry`)."""
    wire_module: str
    """The adapter module whose ``WIRE`` reads and writes the format (imported lazily)."""
    prefixes: tuple[str, ...] = ()
    """The ``provider:`` prefixes `infer_model` resolves to this row (none: not inferable)."""
    model_class: tuple[str, str] | None = None
    """The donegate model class `infer_model` builds: (module, class), imported lazily."""
    sdk: tuple[str, str] | None = None
    """The official SDK's client: (module, class), built from the environment."""
    extra: str | None = None
    """The ``pip install "donegate[EXTRA]"`` that installs the SDK."""
    client_package: str | None = None
    """The top-level package of an SDK client object `infer_model` wraps with `model_class`."""
    keys: tuple[str, ...] = ()
    """The variables the SDK reads an API key from; `infer_model` wants one of them set."""
    keys_alike: bool = False
    """The key variables are equal alternatives (``A or B``), not a main one and fallbacks."""
    key_hint: str = ""
    """Appended to the missing-key message."""
    keyless: str | None = None
    """The variable that, set true, switches the SDK to keyless auth (no key is wanted)."""
    secrets: tuple[str, ...] = ()
    """Other credential variables of this provider (never handed to checks)."""
    paths: tuple[str, ...] = ()
    """The emulator's POST paths of a model request, the one clients use first."""
    count_paths: tuple[str, ...] = ()
    """The emulator's POST paths of a token count."""
    path_pattern: str | None = None
    """The emulator's model paths as a regex (group 1: the model, group 2: the method)."""
    listed_models: tuple[str, ...] = ()
    """The names the emulator's model list shows; any name is accepted in requests."""

    def __post_init__(self) -> None:
        if self.prefixes and None in (self.model_class, self.sdk, self.extra):
            raise ValueError(f"{self.wire}: a row with prefixes names its model class, SDK, extra")

    @property
    def emulated(self) -> bool:
        """Whether the emulator serves this format."""
        return bool(self.paths or self.path_pattern)


_OPENAI_KEYS = ("OPENAI_API_KEY",)
_OPENAI_HINT = " (any value, for a compatible server at OPENAI_BASE_URL that takes none)"
_GPT = ("gpt-4o-mini", "gpt-4.1", "gpt-5")

PROVIDERS: tuple[Provider, ...] = (
    Provider(
        wire="openai-chat",
        wire_module="donegate.models.openai_chat",
        prefixes=("openai", "openai-chat"),
        model_class=("donegate.models.sdk", "OpenAIChatModel"),
        sdk=("openai", "OpenAI"),
        extra="openai",
        client_package="openai",
        keys=_OPENAI_KEYS,
        key_hint=_OPENAI_HINT,
        secrets=("AZURE_OPENAI_API_KEY",),
        paths=("/v1/chat/completions", "/chat/completions"),
        listed_models=_GPT,
    ),
    Provider(
        wire="openai-responses",
        wire_module="donegate.models.openai_responses",
        prefixes=("openai-responses",),
        model_class=("donegate.models.sdk", "OpenAIResponsesModel"),
        sdk=("openai", "OpenAI"),
        extra="openai",
        keys=_OPENAI_KEYS,
        key_hint=_OPENAI_HINT,
        paths=("/v1/responses", "/responses"),
        listed_models=_GPT,
    ),
    Provider(
        wire="anthropic-messages",
        wire_module="donegate.models.anthropic_messages",
        prefixes=("anthropic",),
        model_class=("donegate.models.sdk", "AnthropicModel"),
        sdk=("anthropic", "Anthropic"),
        extra="anthropic",
        client_package="anthropic",
        keys=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
        paths=("/v1/messages", "/messages"),
        count_paths=("/v1/messages/count_tokens", "/messages/count_tokens"),
        listed_models=("claude-sonnet-4-6", "claude-haiku-4-5", "claude-opus-4-8"),
    ),
    Provider(
        wire="gemini",
        wire_module="donegate.models.gemini",
        prefixes=("google", "gemini"),
        model_class=("donegate.models.google", "GeminiModel"),
        sdk=("google.genai", "Client"),
        extra="gemini",
        client_package="google",
        keys=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        keys_alike=True,
        keyless="GOOGLE_GENAI_USE_VERTEXAI",
        path_pattern=r"^/(?:v1beta|v1|v1alpha)/(?:models|tunedModels)/([^/:]+):(\w+)$",
        listed_models=("gemini-2.5-flash", "gemini-2.5-pro"),
    ),
    Provider(
        wire="bedrock-converse",
        wire_module="donegate.models.bedrock_converse",
        secrets=("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"),
    ),
    Provider(wire="mistral", wire_module="donegate.models.mistral", secrets=("MISTRAL_API_KEY",)),
    Provider(
        wire="cohere",
        wire_module="donegate.models.cohere",
        secrets=("CO_API_KEY", "COHERE_API_KEY"),
    ),
)
"""Every provider, one row per wire format."""

_BY_WIRE: Mapping[str, Provider] = {p.wire: p for p in PROVIDERS}
_BY_PREFIX: Mapping[str, Provider] = {prefix: p for p in PROVIDERS for prefix in p.prefixes}
_BY_CLIENT: Mapping[str, Provider] = {
    p.client_package: p for p in PROVIDERS if p.client_package is not None
}

PROVIDER_SECRET_ENV = frozenset(name for p in PROVIDERS for name in (*p.keys, *p.secrets))
"""Every provider credential variable: checks and ``run_command`` never get them
(`donegate.harness.custody.child_env`)."""


def by_wire(api: str) -> Provider | None:
    """The row of the wire format `api`, None when there is none."""
    return _BY_WIRE.get(api)


def by_prefix(prefix: str) -> Provider | None:
    """The row an ``infer_model`` prefix (``openai``, ``google``, ...) names, None otherwise."""
    return _BY_PREFIX.get(prefix)


def client_provider(package: str) -> Provider | None:
    """The row whose SDK client objects come from the top-level `package`, None otherwise."""
    return _BY_CLIENT.get(package)


def prefixes() -> tuple[str, ...]:
    """Every ``infer_model`` prefix, in table order."""
    return tuple(_BY_PREFIX)
