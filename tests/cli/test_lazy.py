"""The lazy command table: ``donegate --help`` lists every command without importing one, the
listing says what the commands' own help says, and a command path imports only what it uses."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

import donegate.cli
from donegate.cli._app import COMMANDS, app

PROBE = """\
import atexit, json, os, runpy, sys
atexit.register(lambda: open(os.environ["PROBE_OUT"], "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["donegate", *sys.argv[1:]]
runpy.run_module("donegate", run_name="__main__")
"""

HEAVY = ("pydantic", "jsonschema", "sqlalchemy", "httpx", "httpx2", "openai", "anthropic",
         "google.genai", "rich", "yaml", "cryptography", "asyncio", "celery")  # fmt: skip
"""Packages `donegate --help` has no use for."""


def _load_every_command_module() -> None:
    for info in pkgutil.iter_modules(donegate.cli.__path__, "donegate.cli."):
        importlib.import_module(info.name)


def _imported(tmp_path: Path, *args: str, stdin: str = "") -> set[str]:
    """The modules a ``donegate ARGS`` process had imported when it exited."""
    out = tmp_path / "modules.json"
    subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "PROBE_OUT": str(out), "DONEGATE_HOME": str(tmp_path / "home")},
        cwd=tmp_path,
        check=False,
    )
    return set(json.loads(out.read_text()))


def test_the_table_names_every_command_the_modules_register() -> None:
    _load_every_command_module()
    assert sorted(app.commands) == sorted(COMMANDS)
    for name, entry in COMMANDS.items():
        command = app.commands[name]
        assert command.callback is not None
        assert command.callback.__module__ == entry.module, name


def test_the_table_says_what_each_command_says() -> None:
    _load_every_command_module()
    for name, entry in COMMANDS.items():
        command = app.commands[name]
        stand_in = click.Command(name, help=entry.summary)
        for limit in (20, 45, 58, 80, 200):  # the listing's width, and the docs page's
            assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit), name


def test_an_unknown_name_is_still_unknown() -> None:
    ctx = click.Context(app)
    assert app.get_command(ctx, "no-such-command") is None
    assert "no-such-command" not in app.list_commands(ctx)


def test_help_imports_no_command_module_and_nothing_heavy(tmp_path: Path) -> None:
    modules = _imported(tmp_path, "--help")
    commands = {m for m in modules if m.startswith("donegate.cli.")} - {"donegate.cli._app"}
    assert commands == set()
    assert [m for m in HEAVY if m in modules] == []
    assert not any(m.startswith(("donegate.harness.spec", "donegate.store")) for m in modules)


@pytest.mark.parametrize("command", ["run", "worker"])
def test_a_commands_help_imports_its_module_and_nothing_heavy(tmp_path: Path, command: str) -> None:
    modules = _imported(tmp_path, command, "--help")
    assert f"donegate.cli.{command}" in modules
    assert [m for m in HEAVY if m in modules] == []
    unused = ("donegate.harness.spec", "donegate.harness.runner", "donegate.store",
              "donegate.worker", "donegate.sandbox", "donegate.models",
              "donegate.loop")  # fmt: skip
    assert sorted(m for m in modules if m.startswith(unused)) == []


def test_help_lists_what_the_loaded_commands_list() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "donegate", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        check=True,
    ).stdout
    _load_every_command_module()  # now click formats the real commands' own help
    width = 78  # what click makes of an 80-column terminal (it keeps 2 columns free)
    ctx = click.Context(
        app, info_name="donegate", terminal_width=width, max_content_width=width,
        **app.context_settings,
    )  # fmt: skip
    assert listed == app.get_help(ctx) + "\n"


@pytest.mark.slow
def test_the_hook_imports_only_what_a_stop_uses(tmp_path: Path) -> None:
    (tmp_path / "task.yaml").write_text("id: t\nprompt: p\nchecks:\n  - run: ['true']\n")
    stop = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "Stop",
            "stop_hook_active": False, "last_assistant_message": "done"}  # fmt: skip
    modules = _imported(tmp_path, "hook", "claude", "--task", "task.yaml", stdin=json.dumps(stop))
    assert "donegate.cli.hook" in modules and "donegate.harness.agents.core" in modules
    unused = ("sqlalchemy", "httpx", "httpx2", "openai", "anthropic", "google.genai", "rich",
              "jsonschema", "asyncio", "sqlite3", "http.client", "donegate.store",
              "donegate.worker", "donegate.testing", "donegate.cli.check", "donegate.cli.run",
              "donegate.harness.runner", "donegate.loop", "donegate.run",
              "donegate.harness.agents.install", "donegate.harness.agents.doctor",
              "donegate.harness.escalation", "donegate.records.report",
              "donegate.harness.agents.probe", "donegate.cli._doctor")  # fmt: skip
    assert [m for m in unused if m in modules] == []


def _stop(tmp_path: Path, session: str, check: str = "run: ['true']") -> set[str]:
    """The modules one stop of a new session imported (a task whose one check is `check`)."""
    task = tmp_path / "task.yaml"
    task.write_text(f"id: t\nprompt: p\nchecks:\n  - {check}\n")
    stop = {"session_id": session, "cwd": str(tmp_path), "hook_event_name": "Stop",
            "stop_hook_active": False, "last_assistant_message": "done"}  # fmt: skip
    return _imported(tmp_path, "hook", "claude", "--task", str(task), stdin=json.dumps(stop))


@pytest.mark.slow
def test_a_certified_stop_imports_only_what_it_uses(tmp_path: Path) -> None:
    _stop(tmp_path, "s1")  # the first stop of a data directory makes its keys
    modules = _stop(tmp_path, "s2")
    assert "cryptography.hazmat.primitives.asymmetric.ed25519" in modules  # it signed
    unused = ("cryptography.hazmat.primitives.serialization", "donegate.harness.builtin_tools",
              "donegate.harness.world", "donegate.finish", "donegate.tools",
              "donegate.spend")  # fmt: skip
    assert [m for m in unused if m in modules] == []


@pytest.mark.slow
def test_a_blocked_stop_builds_no_certificate_and_imports_none(tmp_path: Path) -> None:
    modules = _stop(tmp_path, "s1", check="file_exists: missing.txt")
    assert "donegate.harness.checks" in modules and "donegate.harness.agents.state" in modules
    unused = ("donegate.harness.certificate", "donegate.records.certificate",
              "donegate.harness._proof", "donegate.harness.evidence",
              "donegate.events")  # fmt: skip
    assert [m for m in unused if m in modules] == []
