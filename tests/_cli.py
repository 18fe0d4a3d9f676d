"""`donegate ARGS` in the test's own process, shaped like ``subprocess.run``'s result.

A subprocess pays about a second of interpreter and import start-up per call; where a test
asserts only on the exit code, stdout and stderr of a command, `donegate` runs `donegate.cli.main`
in-process under click's `CliRunner` isolation (stdin, stdout, stderr and the environment
swapped, the working directory changed for the call) and returns the same three facts. Tests
about a real process (signals, custody, a real agent CLI, the sandbox) keep ``subprocess``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner

from donegate.cli import main


def donegate(
    *args: str,
    input: str | None = None,
    cwd: Path | str | None = None,
    env: Mapping[str, str | None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``donegate ARGS`` in-process; `env` overrides variables (None unsets one)."""
    here = os.getcwd()
    with CliRunner().isolation(input=input, env=env) as (out, err, _):
        if cwd is not None:
            os.chdir(cwd)
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            os.chdir(here)
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return subprocess.CompletedProcess(["donegate", *args], code, stdout, stderr)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``donegate ARGS`` in this process, read through `capsys`: (exit code, stdout, stderr)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
