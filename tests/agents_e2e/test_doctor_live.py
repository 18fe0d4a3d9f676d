"""``donegate hook doctor``'s live probe with the real CLIs: it passes for each CLI installed as
documented, and fails, naming the cause, for Codex without trust, Gemini CLI in an untrusted
folder and Claude Code with ``disableAllHooks``.

The doctor runs the CLI itself (found on ``PATH``, as a user's would be) headless against its
own in-process emulator; the test only sets up a project and a HOME of its own, as a user
would, and reads what the doctor printed and exited with. The probe's proof is the gate's own
record plus the model request carrying the block, so a pass here means the hook really fired.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.agents_e2e._agents import ALL, CLAUDE, CLAUDE_NEW, CODEX, GEMINI, SRC, Cli, task_file

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

FIRED = "the gate's hook fired, blocked once, and its reason reached the model"
NEVER = "the gate's hook never fired"
LIMIT = 420.0
"""Seconds one doctor run (its CLI probe included) may take before the test gives up."""


@dataclass
class Project:
    """A project with the gate installed, and the HOME of the user who installed it."""

    cli: Cli
    root: Path

    def __post_init__(self) -> None:
        self.work = self.root / "work"
        self.home = self.root / "home"
        self.bin = self.root / "bin"
        self.data = self.root / "donegate"
        for folder in (self.work, self.home, self.bin):
            folder.mkdir(parents=True)
        # the doctor runs the CLI it finds on PATH, as a user's shell would
        (self.bin / self.cli.kind).symlink_to(self.cli.binary())
        self.task = task_file(self.root / "task.yaml", max_continuations=2)

    def env(self, **extra: str) -> dict[str, str]:
        base = {
            "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(SRC),
            "DONEGATE_HOME": str(self.data),
        }
        return base | extra

    def donegate(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "donegate", *args], cwd=self.work, env=self.env(**extra),
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=LIMIT, check=False,
        )  # fmt: skip

    def install(self, *flags: str) -> None:
        done = self.donegate("hook", "install", self.cli.kind, "--task", str(self.task),
                             "--dir", str(self.work), "--no-doctor", *flags)  # fmt: skip
        assert done.returncode == 0, done.stderr

    def doctor(self, **extra: str) -> subprocess.CompletedProcess[str]:
        return self.donegate("hook", "doctor", self.cli.kind, "--dir", str(self.work),
                             "--task", str(self.task), **extra)  # fmt: skip

    def trust_codex_project(self) -> None:
        """What a user does once (Codex's own trust prompt writes the same entry)."""
        config = self.home / ".codex" / "config.toml"
        config.parent.mkdir(exist_ok=True)
        config.write_text(f'[projects.{json.dumps(str(self.work))}]\ntrust_level = "trusted"\n')


@pytest.mark.parametrize("cli", ALL, ids=[c.label for c in ALL])
def test_the_doctor_sees_the_hook_fire_when_installed_as_documented(
    cli: Cli, tmp_path: Path
) -> None:
    project = Project(cli, tmp_path)
    if cli.kind == "codex":
        project.trust_codex_project()
        project.install("--trust")
    else:
        project.install()
    if cli.kind == "gemini":  # docs/agents.md: trust the folder (or GEMINI_CLI_TRUST_WORKSPACE)
        folders = project.home / ".gemini" / "trustedFolders.json"
        folders.parent.mkdir(exist_ok=True)
        folders.write_text(json.dumps({str(project.work): "TRUST_FOLDER"}))
    before = {p: p.read_bytes() for p in project.work.rglob("*") if p.is_file()}
    done = project.doctor()
    assert done.returncode == 0, done.stderr
    assert FIRED in done.stderr
    # the probe ran on a scratch copy: the project and the user's gate state are untouched
    assert {p: p.read_bytes() for p in project.work.rglob("*") if p.is_file()} == before
    assert not (project.data / "hooks" / "donegate-doctor-probe").exists()


@pytest.mark.parametrize("cli", [CLAUDE, CLAUDE_NEW], ids=["claude", "claude-new"])
def test_the_doctor_names_disable_all_hooks_when_claude_code_skips_the_hook(
    cli: Cli, tmp_path: Path
) -> None:
    project = Project(cli, tmp_path)
    project.install()
    settings = project.home / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text('{"disableAllHooks": true}')
    done = project.doctor()
    assert done.returncode == 1, done.stderr
    assert f"disabled hooks: `disableAllHooks: true` in {settings} (user settings)" in done.stderr
    assert NEVER in done.stderr


def test_the_doctor_names_the_missing_codex_trust_entries(tmp_path: Path) -> None:
    project = Project(CODEX, tmp_path)
    project.install()  # no --trust, and the project not trusted either
    config = project.home / ".codex" / "config.toml"
    untrusted_project = project.doctor()
    assert untrusted_project.returncode == 1, untrusted_project.stderr
    entry = f'lacks [projects.{json.dumps(str(project.work))}] trust_level = "trusted"'
    assert f"untrusted project: Codex reads {project.work / '.codex' / 'hooks.json'}" in (
        untrusted_project.stderr
    )
    assert f"{config} {entry}" in untrusted_project.stderr
    assert NEVER in untrusted_project.stderr

    project.trust_codex_project()  # the folder trusted, the hook still not
    untrusted_hook = project.doctor()
    assert untrusted_hook.returncode == 1, untrusted_hook.stderr
    key = f"{project.work / '.codex' / 'hooks.json'}:stop:0:0"
    assert "Codex reports it untrusted" in untrusted_hook.stderr
    assert f'lacks [hooks.state.{json.dumps(key)}] trusted_hash = "sha256:' in (
        untrusted_hook.stderr
    )
    assert NEVER in untrusted_hook.stderr


def test_the_doctor_names_gemini_cli_s_untrusted_folder(tmp_path: Path) -> None:
    project = Project(GEMINI, tmp_path)
    project.install()
    done = project.doctor()
    assert done.returncode == 1, done.stderr
    settings = project.work / ".gemini" / "settings.json"
    assert f"untrusted folder: Gemini CLI skips {settings}'s hooks" in done.stderr
    assert NEVER in done.stderr


def test_hook_install_ends_with_the_live_doctor(tmp_path: Path) -> None:
    project = Project(CLAUDE, tmp_path)
    done = project.donegate("hook", "install", "claude", "--task", str(project.task),
                            "--dir", str(project.work))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert FIRED in done.stderr
    skipped = project.donegate("hook", "install", "claude", "--task", str(project.task),
                               "--dir", str(project.work), "--no-doctor")  # fmt: skip
    assert skipped.returncode == 0 and "live probe" not in skipped.stderr
