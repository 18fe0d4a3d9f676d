"""`infer_model` from a string: a missing API key is one line naming the variable."""

from __future__ import annotations

from pathlib import Path

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


def test_script_is_a_scheme_infer_model_resolves_on_every_path(tmp_path: Path) -> None:
    """``script:FILE`` is a fresh player from `infer_model` itself (the library, the worker and
    the CLI all resolve models there), each call its own player of one parsed script."""
    from donegate.testing.player import ScriptedModel

    script = Path(__file__).parents[1] / "scripts" / "tool_then_text.yaml"
    first, second = infer_model(f"script:{script}"), infer_model(f"script:{script}")
    assert isinstance(first, ScriptedModel) and isinstance(second, ScriptedModel)
    assert first is not second and first.script is second.script is not None
    assert first.name == "script:tool_then_text.yaml"


@pytest.mark.parametrize(
    ("model", "says"),
    [("script:", "names its file"), ("script:/nowhere/x.yaml", "no such script file")],
)
def test_a_bad_script_model_is_one_line(model: str, says: str) -> None:
    with pytest.raises(UserError, match=says) as info:
        infer_model(model)
    assert "\n" not in str(info.value)
