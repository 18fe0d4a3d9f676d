"""donegate's pytest plugin: script fixtures, a running emulator, and guarded live tests.

Loaded through the ``pytest11`` entry point, so it must be cheap to import: nothing heavy is
imported until a fixture is used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from donegate.testing.emulator import Emulator
    from donegate.testing.player import ScriptedModel
    from donegate.testing.script import Script

__all__ = [
    "donegate_emulator",
    "donegate_record",
    "load_donegate_script",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_runtest_makereport",
    "scripted_model",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("donegate")
    group.addoption(
        "--donegate-record",
        action="store_true",
        default=False,
        help="re-record donegate scripts from real provider runs (deliberate, rare)",
    )
    group.addoption(
        "--donegate-live",
        action="store_true",
        default=False,
        help="run tests marked donegate_live against real provider APIs",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "donegate_live: calls a real provider API; blocked unless --donegate-live is given",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--donegate-live") or config.getoption("--donegate-record"):
        return
    blocked = pytest.mark.skip(reason="live provider test: pass --donegate-live to run it")
    for item in items:
        if item.get_closest_marker("donegate_live") is not None:
            item.add_marker(blocked)


@pytest.fixture
def donegate_record(request: pytest.FixtureRequest) -> bool:
    """True when the run was started with ``--donegate-record`` (re-record scripts)."""
    return bool(request.config.getoption("--donegate-record"))


@pytest.fixture
def load_donegate_script(request: pytest.FixtureRequest) -> Callable[[str | Path], Script]:
    """Load a script file by path, relative paths resolved against the test file's folder."""
    from donegate.testing.script import load_script

    base = Path(str(request.node.fspath)).parent

    def load(path: str | Path) -> Script:
        p = Path(path)
        return load_script(p if p.is_absolute() else base / p)

    return load


@pytest.fixture
def scripted_model(request: pytest.FixtureRequest) -> Iterator[Callable[..., ScriptedModel]]:
    """Factory for strict `ScriptedModel`s; every model made must use all its turns by teardown.

    ``scripted_model("scripts/refund.yaml")`` or ``scripted_model([turn, ...])``.
    """
    from donegate.testing.player import ScriptedModel
    from donegate.testing.script import load_script

    base = Path(str(request.node.fspath)).parent
    made: list[ScriptedModel] = []

    def make(source: Any, **kwargs: Any) -> ScriptedModel:
        if isinstance(source, (str, Path)):
            p = Path(source)
            source = load_script(p if p.is_absolute() else base / p)
        model = ScriptedModel(source, **kwargs)
        made.append(model)
        return model

    yield make
    if not getattr(request.node, "_donegate_failed", False):
        for model in made:
            model.assert_exhausted()


@pytest.fixture
def donegate_emulator(request: pytest.FixtureRequest) -> Iterator[Emulator]:
    """A provider-emulating HTTP server on 127.0.0.1; load scripts with ``.load(path)``.

    Point any client at ``emulator.base_url`` (OpenAI: ``base_url + "/v1"``; Anthropic and Gemini:
    ``base_url``); ``emulator.requests`` is its request log. Relative script paths resolve
    against the test file's folder. Strict like `scripted_model`: a passing test fails at
    teardown if a script was not used up or a call went past its end (set
    ``emulator.strict = False`` to allow that).
    """
    from donegate.testing.emulator import Emulator

    base = Path(str(request.node.fspath)).parent
    with Emulator(base_dir=base) as emulator:
        emulator.strict = True
        yield emulator
        if emulator.strict and not getattr(request.node, "_donegate_failed", False):
            emulator.assert_exhausted()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        item._donegate_failed = True  # type: ignore[attr-defined]  # read by strict fixtures
    return report
