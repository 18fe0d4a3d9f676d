"""Install hints: every missing package of every needed extra, named at once in one line."""

from __future__ import annotations

from importlib import metadata

import pytest

from donegate import _extras
from donegate.errors import MissingExtra


def test_extras_are_read_from_the_installed_metadata() -> None:
    assert _extras._requirements("anthropic") == ("anthropic", "httpx2")
    assert {"anthropic", "google-genai", "psycopg", "celery"} <= set(_extras._requirements("all"))
    _extras.require("anthropic", "openai", "server")  # the dev install has them all


def test_every_missing_package_is_named_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    real = metadata.distribution
    gone = {"anthropic", "httpx2", "starlette"}

    def distribution(name: str) -> metadata.Distribution:
        if name in gone:
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "distribution", distribution)
    with pytest.raises(MissingExtra) as info:
        _extras.require("anthropic", "openai", "server")
    message = str(info.value)
    assert message == (
        "anthropic, httpx2, starlette are not installed: "
        'pip install "donegate[anthropic,openai,server]"'
    )
    assert "\n" not in message
    assert (
        str(MissingExtra("celery", "celery"))
        == 'celery is not installed: pip install "donegate[celery]"'
    )
