"""The command group; each command lives in its own module and registers itself here."""

from __future__ import annotations

import click

__all__ = ["app"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="donegate")
def app() -> None:
    """Run tool-calling LLM agents to a finish that can be proven."""


def _register() -> None:
    # Imported for their side effect of adding commands to `app`.
    from donegate.cli import classify, demo, emulate, hook, queue, replay, run, verify  # noqa: F401


_register()
