"""`infer_model` from a string: a missing API key is one line naming the variable."""

from __future__ import annotations

import pytest

from donegate.errors import UserError
from donegate.models.infer import infer_model

KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY",
        "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI")  # fmt: skip


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("anthropic:claude-sonnet-4-5", "set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"),
        (
            "openai:gpt-4.1",
            "set OPENAI_API_KEY (any value, for a compatible server at "
            "OPENAI_BASE_URL that takes none)",
        ),
        ("openai-responses:o3", "set OPENAI_API_KEY"),
        ("google:gemini-2.5-flash", "set GEMINI_API_KEY or GOOGLE_API_KEY"),
        ("gemini:gemini-2.5-pro", "set GEMINI_API_KEY or GOOGLE_API_KEY"),
    ],
)
def test_a_missing_key_names_its_variable(model: str, message: str) -> None:
    with pytest.raises(UserError) as info:
        infer_model(model)
    assert str(info.value).startswith(f"{model} needs an API key: {message}")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("model", "env", "name"),
    [
        ("anthropic:claude-sonnet-4-5", {"ANTHROPIC_API_KEY": "k"}, "anthropic:claude-sonnet-4-5"),
        (
            "anthropic:claude-sonnet-4-5",
            {"ANTHROPIC_AUTH_TOKEN": "t"},
            "anthropic:claude-sonnet-4-5",
        ),
        ("openai:gpt-4.1", {"OPENAI_API_KEY": "k"}, "openai:gpt-4.1"),
        ("google:gemini-2.5-flash", {"GOOGLE_API_KEY": "k"}, "google:gemini-2.5-flash"),
        ("gemini:gemini-2.5-flash", {"GEMINI_API_KEY": "k"}, "google:gemini-2.5-flash"),
    ],
)
def test_any_of_the_variables_is_enough(
    monkeypatch: pytest.MonkeyPatch, model: str, env: dict[str, str], name: str
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert infer_model(model).name == name
