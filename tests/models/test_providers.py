"""The provider table drives every place that lists providers: each consumer's set is the table's.

Each test asks a consumer for its own view (the registry's formats, `infer_model`'s prefixes and
key messages, custody's dropped variables, the emulator's routes and model lists, the test kit's
SDK clients) and compares it with `PROVIDERS`; a consumer keeping a copy of its own drifts from
the table as soon as a row changes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from donegate.errors import UserError
from donegate.harness.custody import child_env
from donegate.models import infer
from donegate.models.providers import (
    PROVIDER_SECRET_ENV,
    PROVIDERS,
    Provider,
    by_prefix,
    by_wire,
)
from donegate.models.registry import APIS, wire_format
from donegate.testing._replay import request_path
from donegate.testing._routes import Route, route, static_reply
from donegate.testing._sdk import SDK_APIS
from donegate.testing.audit._gateway import _path as gateway_path

INFERABLE = [(prefix, p) for p in PROVIDERS for prefix in p.prefixes]
EMULATED = [p for p in PROVIDERS if p.emulated]


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in {*PROVIDER_SECRET_ENV, *(p.keyless for p in PROVIDERS if p.keyless)}:
        monkeypatch.delenv(name, raising=False)


def test_the_registry_reads_exactly_the_tables_wire_formats() -> None:
    assert tuple(p.wire for p in PROVIDERS) == APIS
    for p in PROVIDERS:
        assert wire_format(p.wire).name == p.wire
        assert by_wire(p.wire) is p


def test_a_row_infer_model_resolves_names_everything_it_builds() -> None:
    with pytest.raises(ValueError, match="acme: a row with prefixes names its model class"):
        Provider(wire="acme", wire_module="acme", prefixes=("acme",), sdk=("acme", "Client"))


def test_infer_model_knows_exactly_the_tables_prefixes() -> None:
    with pytest.raises(UserError) as info:
        infer.infer_model("nobody:model")
    listed = str(info.value).rpartition("provider one of ")[2].split(", ")
    assert listed == sorted(prefix for prefix, _ in INFERABLE)
    assert all(by_prefix(prefix) is p for prefix, p in INFERABLE)


@pytest.mark.parametrize("prefix", [prefix for prefix, _ in INFERABLE])
def test_a_missing_key_names_the_tables_variables(prefix: str) -> None:
    p = by_prefix(prefix)
    assert p is not None and p.keys
    with pytest.raises(UserError) as info:
        infer.infer_model(f"{prefix}:m")
    message = str(info.value)
    assert message.startswith(f"{prefix}:m needs an API key: set {p.keys[0]}")
    assert all(name in message for name in p.keys)
    assert message.endswith(p.key_hint)


@pytest.mark.parametrize("prefix", [prefix for prefix, _ in INFERABLE])
def test_infer_model_builds_the_tables_model_class(
    monkeypatch: pytest.MonkeyPatch, prefix: str
) -> None:
    p = by_prefix(prefix)
    assert p is not None and p.model_class is not None and p.sdk is not None
    monkeypatch.setenv(p.keys[-1], "k")
    model = infer.infer_model(f"{prefix}:m")
    assert (type(model).__module__, type(model).__name__) == p.model_class


def test_the_keyless_switch_lets_a_model_build_without_a_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keyless = [(prefix, p) for prefix, p in INFERABLE if p.keyless]
    assert keyless
    for prefix, p in keyless:
        assert p.keyless is not None
        monkeypatch.setenv(p.keyless, "true")
        try:
            infer.infer_model(f"{prefix}:m")
        except UserError as exc:  # the SDK may still want a project: never a missing key
            assert "needs an API key" not in str(exc)


def test_custody_withholds_every_credential_in_the_table() -> None:
    named = {name for p in PROVIDERS for name in (*p.keys, *p.secrets)}
    assert infer.PROVIDER_SECRET_ENV == PROVIDER_SECRET_ENV == named
    base = {name: "secret" for name in named} | {"PATH": "/bin"}
    assert child_env(base) == {"PATH": "/bin"}
    assert child_env(base, provider_keys=True) == base


def test_the_secret_list_keeps_every_credential_it_had() -> None:
    """Custody's list only grows: a variable dropped from the table would reach the checks."""
    before = {
        "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GEMINI_API_KEY",
        "GOOGLE_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK", "MISTRAL_API_KEY", "CO_API_KEY", "COHERE_API_KEY",
        "AZURE_OPENAI_API_KEY",
    }  # fmt: skip
    assert before <= PROVIDER_SECRET_ENV


def test_the_emulator_routes_exactly_the_tables_paths() -> None:
    served = set()
    for p in EMULATED:
        for path in p.paths:
            assert route("POST", path, {}) == Route("model", p.wire)
            served.add(p.wire)
        for path in p.count_paths:
            assert route("POST", path, {}) == Route("count_tokens", p.wire)
        if p.path_pattern:
            assert re.match(p.path_pattern, "/v1beta/models/m:generateContent")
            assert route("POST", "/v1beta/models/m:generateContent", {}).api == p.wire
            served.add(p.wire)
    assert served == {p.wire for p in EMULATED}
    for p in PROVIDERS:
        if not p.emulated:  # a format the emulator does not serve has no path of its own
            assert not p.count_paths and not p.listed_models
    assert route("POST", "/v1/completions", {}) == Route("unknown")


@pytest.mark.parametrize("api", ["openai-chat", "anthropic-messages", "gemini"])
def test_the_emulators_model_list_shows_the_tables_names(api: str) -> None:
    p = by_wire(api)
    assert p is not None and p.listed_models
    body = static_reply(Route("models", api), None).body.decode()
    found = re.findall(r'"(?:id|displayName)": "([^"]+)"', body)
    assert tuple(found) == p.listed_models


def test_the_test_kits_paths_and_clients_come_from_the_table() -> None:
    assert tuple(p.wire for p in PROVIDERS if p.sdk is not None) == SDK_APIS
    for p in EMULATED:
        path = request_path(p.wire, "m", stream=False)
        assert path == (p.paths[0] if p.paths else "/v1beta/models/m:generateContent")
        assert route("POST", path.partition("?")[0], {}).api == p.wire
        assert gateway_path(p.wire).partition("?")[0].startswith("/v1")
    with pytest.raises(UserError) as info:
        gateway_path("bedrock-converse")
    assert str(info.value).endswith(", ".join(p.wire for p in EMULATED))


def test_the_models_doc_lists_every_prefix_with_its_extra_and_keys() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "models.md").read_text()
    rows = [line for line in doc.splitlines() if line.startswith("| `") and ":NAME`" in line]
    for prefix, p in INFERABLE:
        (line,) = [r for r in rows if f"`{prefix}:NAME`" in r]
        assert f"donegate[{p.extra}]" in line
        assert all(f"`{name}" in line for name in p.keys)
        assert p.keyless is None or f"`{p.keyless}=" in line
    named = {m for r in rows for m in re.findall(r"`([a-z-]+):NAME`", r)}
    assert named == {prefix for prefix, _ in INFERABLE}
