"""``donegate hook doctor``'s work: the static diagnosis, then the live probe, one line each.

Kept out of `donegate.cli.hook`, which an agent CLI imports at every stop: only ``doctor`` and
``install`` import this. The probe's emulator is started here because only ``cli`` may import
`donegate.testing`; the probe itself is `donegate.harness.agents.probe`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import click

from donegate.harness.agents.base import AgentCLI

__all__ = ["PROBE_TIMEOUT", "run_doctor"]

PROBE_TIMEOUT = 180.0
"""Seconds the probe's CLI run may take before it counts as not fired."""


def run_doctor(
    agent: AgentCLI,
    directory: Path,
    task: Path | None,
    *,
    live: bool = True,
    timeout: float = PROBE_TIMEOUT,
) -> bool:
    """Print the doctor's findings, one line each; whether the hook will fire (and, when
    `live`, was seen to fire and block)."""
    from donegate.harness.agents.doctor import cli_version, diagnose
    from donegate.harness.spec import load_task

    spec = load_task(task) if task is not None else None
    env = dict(os.environ)
    executable = shutil.which(agent.name)
    version = cli_version(executable, env) if executable else None
    findings = diagnose(agent, directory, env=env, spec=spec, task=task, version=version,
                        executable=executable if live else None)  # fmt: skip
    for finding in findings:
        _say(finding.line)
    ok = not any(f.blocks for f in findings)
    if live:
        ok = _live(agent, directory, task, executable=executable, env=env, timeout=timeout) and ok
    if ok:
        _say(f"{agent.title}: nothing stops the gate's hook in {directory.resolve()}")
    return ok


def _live(
    agent: AgentCLI,
    directory: Path,
    task: Path | None,
    *,
    executable: str | None,
    env: dict[str, str],
    timeout: float,
) -> bool:
    if executable is None:
        _say(f"live probe: {agent.name} is not on PATH, so the hook was not seen to fire "
             "(--static reads the config only)")  # fmt: skip
        return False
    try:
        import starlette  # noqa: F401  # the emulator's HTTP side: the server extra

        from donegate.testing.emulator import Emulator
        from donegate.testing.script import parse_script
    except ImportError:
        _say('live probe: needs the emulator\'s HTTP server: pip install "donegate[server]" '
             "(--static reads the config only)")  # fmt: skip
        return False
    from donegate.harness.agents.probe import prepare_probe, probe_script, run_probe

    with (
        tempfile.TemporaryDirectory(prefix="donegate-doctor-") as scratch,
        Emulator(parse_script(probe_script()), side_calls=True) as emulator,
    ):
        probe = prepare_probe(agent, directory, scratch=Path(scratch), env=env,
                              executable=executable, base_url=emulator.base_url,
                              task=task)  # fmt: skip
        result = run_probe(probe, requests=lambda: emulator.requests, timeout=timeout)
    _say(result.line(agent))
    if not result.ok:
        for note in probe.notes:
            _say(f"live probe: {note}")
        tail = " ".join(result.output.split())[-300:]
        if tail and result.exit_code != 0:  # a clean exit's output says nothing more
            _say(f"live probe: {agent.name} printed: {tail}")
    return result.ok


def _say(line: str) -> None:
    click.echo(f"donegate doctor: {line}", err=True)
