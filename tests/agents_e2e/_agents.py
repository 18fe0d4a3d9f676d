"""The real agent CLIs, headless against the emulator on loopback, with donegate's gate.

Each CLI runs with a HOME (and config home) of the test's own, so no user setting, login or
network is involved: the emulator is the only model API it can reach. The gate is this
checkout's donegate (``PYTHONPATH``), with its data directory (``DONEGATE_HOME``) in the test's
folder, outside the agent's workdir. The model API is ``donegate emulate`` in a process of its
own (`Emulate`), as CI and users run it. Two ways to gate a run, as a user would:

- ``exec``: ``donegate exec --task TASK --json --max-continuations N -- AGENT ARGS...``;
- ``install``: ``donegate hook install AGENT --task TASK --dir WORK`` (Codex: ``--trust``), then
  the agent's own command line.

How each CLI is pointed at the emulator (measured; see ``/work/wt/_notes/cli-e2e.md``):

- Claude Code: ``ANTHROPIC_BASE_URL``; ``ENABLE_TOOL_SEARCH=false`` and
  ``CLAUDE_CODE_ENABLE_TODO_TOOLS=1`` so 2.1.332 offers TaskCreate/TaskUpdate up front as
  2.1.197 does.
- Codex CLI: a model provider in ``$CODEX_HOME/config.toml`` (``wire_api = "responses"``), the
  workdir trusted there; stdin closed (``codex exec`` reads a prompt from an open stdin).
- Gemini CLI: ``GOOGLE_GEMINI_BASE_URL``, the API-key auth type in ``~/.gemini/settings.json``,
  ``GEMINI_CLI_TRUST_WORKSPACE=true`` (an untrusted folder drops ``--yolo`` and project hooks),
  ``-m`` given so the model router's side calls are not made.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import pytest
import yaml

import donegate

SRC = Path(donegate.__file__).resolve().parents[1]  # the hooks run this checkout's donegate
SCRIPTS = Path(__file__).resolve().parent / "scripts"
PROMPT = "write a.txt, b.txt, c.txt and d.txt"
FILES = ("a.txt", "b.txt", "c.txt", "d.txt")
CHECK_PREFIX = "GATE-CHECK"
"""Every check's name starts so: it reaches the model only inside the gate's reason."""
NEWEST_CLAUDE = "/opt/claude-new/node_modules/.bin/claude"
"""Where ``.ci/agents.sh`` puts the newest Claude Code (``DONEGATE_CLAUDE_NEW`` overrides)."""
TIMEOUT = 240.0
"""Seconds one gated session may take before the test gives up on it."""

Kind = Literal["claude", "codex", "gemini"]
Mode = Literal["exec", "install"]


class Emulate:
    """``donegate emulate SCRIPTS --port 0`` in a process of its own, for one test.

    ``with Emulate(*scripts) as emu:``; `requests` and `status` ask the running server
    (``/_donegate/requests``, ``/_donegate/status``), and the summary it prints on exit is kept.
    """

    def __init__(self, *scripts: Path, side_calls: bool = False) -> None:
        self.argv = [sys.executable, "-m", "donegate", "emulate", *map(str, scripts),
                     "--port", "0"] + (["--side-calls"] if side_calls else [])  # fmt: skip
        self.base_url = ""
        self.stderr: list[str] = []
        """What the emulator logged (its ready line, warnings)."""
        self.summary: dict[str, Any] | None = None
        """The JSON it printed when stopped."""
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Emulate:
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        pipe = subprocess.PIPE
        proc = subprocess.Popen(
            self.argv, env=env, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe, text=True
        )
        self._proc = proc
        lines: queue.Queue[str] = queue.Queue()

        def pump() -> None:  # drains stderr for the whole run, so the server never blocks on it
            assert proc.stderr is not None
            for line in proc.stderr:
                self.stderr.append(line)
                lines.put(line)
            lines.put("")

        threading.Thread(target=pump, daemon=True).start()
        while not self.base_url:
            try:
                line = lines.get(timeout=30)
            except queue.Empty:
                line = ""
            if not line:
                self.__exit__(None, None, None)
                raise AssertionError("donegate emulate did not start:\n" + "".join(self.stderr))
            if line.startswith("donegate emulator on "):
                self.base_url = line.split()[3]
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        if out.strip():
            self.summary = json.loads(out.strip().splitlines()[-1])

    def _get(self, what: str) -> Any:
        with urllib.request.urlopen(f"{self.base_url}/_donegate/{what}", timeout=30) as answer:
            return json.loads(answer.read())

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The request log, one entry per request received."""
        entries: list[dict[str, Any]] = self._get("requests")
        return entries

    def status(self) -> dict[str, Any]:
        """Turns served and left per conversation."""
        status: dict[str, Any] = self._get("status")
        return status

    def assert_exhausted(self) -> None:
        """Every conversation used all its turns and nothing went wrong."""
        status = self.status()
        if status["unused_turns"] or status["errors"]:
            raise AssertionError(json.dumps(status["conversations"], indent=1))


@dataclass(frozen=True)
class Cli:
    """One agent CLI under test: which program, found where."""

    kind: Kind
    label: str
    """The test id: ``claude`` (the oldest supported), ``claude-new``, ``codex``, ``gemini``."""
    require: str
    """The environment variable that turns a missing binary into a failure (CI sets it)."""

    def binary(self) -> str:
        """The executable; skip the test when it is missing, unless CI requires it."""
        found: str | None
        if self.label == "claude-new":
            path = os.environ.get("DONEGATE_CLAUDE_NEW", NEWEST_CLAUDE)
            found = path if os.access(path, os.X_OK) else None
        else:
            found = shutil.which(self.kind)
        if found is None:
            if os.environ.get(self.require):
                pytest.fail(f"{self.require} is set but {self.label} is not installed")
            pytest.skip(f"{self.label} is not installed (see .ci/agents.sh)")
        return found


CLAUDE = Cli("claude", "claude", "DONEGATE_REQUIRE_CLAUDE")
CLAUDE_NEW = Cli("claude", "claude-new", "DONEGATE_REQUIRE_CLAUDE")
CODEX = Cli("codex", "codex", "DONEGATE_REQUIRE_CODEX")
GEMINI = Cli("gemini", "gemini", "DONEGATE_REQUIRE_GEMINI")
ALL = (CLAUDE, CLAUDE_NEW, CODEX, GEMINI)


def task_file(path: Path, *, max_continuations: int) -> Path:
    """The task: the four files exist. Written outside the workdir, as the gate expects."""
    spec = {
        "id": "four-files",
        "prompt": PROMPT,
        "max_continuations": max_continuations,
        "checks": [{"name": f"{CHECK_PREFIX} {name}", "file_exists": name} for name in FILES],
    }
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@dataclass
class Run:
    """How one gated session ended, and what it left behind."""

    code: int
    """The exit code of what the test ran: ``donegate exec``, or the agent itself."""
    stdout: str
    stderr: str
    summary: dict[str, Any] | None
    """``donegate exec --json``'s object (None in install mode)."""
    requests: list[dict[str, Any]]
    """The emulator's model requests, in order."""
    home: Path
    """``DONEGATE_HOME``: hook state, escalation reports, certificates."""

    def reports(self) -> list[dict[str, Any]]:
        """The escalation reports written (JSON), oldest first."""
        folder = self.home / "escalations"
        paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
        return [json.loads(p.read_text(encoding="utf-8")) for p in paths]

    def certificates(self) -> list[Path]:
        """The certificate files written."""
        folder = self.home / "certificates"
        return sorted(p for p in folder.rglob("*.json")) if folder.is_dir() else []

    def gate_messages(self, marker: str = CHECK_PREFIX) -> list[int]:
        """Indexes of the model requests carrying a new message from the gate.

        How a CLI wraps a block's reason differs by CLI and version (a user turn, a hook-prompt
        tag, a system message, or two of them), so this only asks where `marker`, which only
        the gate's reasons contain, occurs more often than in the request before.
        """
        counts = [json.dumps(r.get("body")).count(marker) for r in self.requests]
        return [i for i, n in enumerate(counts) if n > (counts[i - 1] if i else 0)]

    def assert_exhausted(self, emu: Emulate) -> None:
        """Every scripted turn was served, nothing else; else say how the session went."""
        try:
            emu.assert_exhausted()
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.explain()}") from None

    def explain(self) -> str:
        """What to show when an assertion fails."""
        return (
            f"exit {self.code}; {len(self.requests)} model request(s)\n"
            f"stdout: {self.stdout[-3000:]}\nstderr: {self.stderr[-4000:]}"
        )


@dataclass
class Session:
    """A folder for one gated session: the workdir, the HOMEs, the task beside the workdir."""

    cli: Cli
    root: Path
    binary: str = field(init=False)
    work: Path = field(init=False)
    home: Path = field(init=False)
    donegate_home: Path = field(init=False)
    gemini_model: str | None = "gemini-2.5-flash"
    """Gemini's ``-m``; None leaves it on auto, which routes each prompt with a side call."""

    def __post_init__(self) -> None:
        self.binary = self.cli.binary()
        self.work = self.root / "work"
        self.home = self.root / "home"
        self.donegate_home = self.root / "donegate"
        for folder in (self.work, self.home):
            folder.mkdir(parents=True, exist_ok=True)

    @property
    def task(self) -> Path:
        """``../task.yaml`` seen from the workdir (a script's shell command can reach it)."""
        return self.root / "task.yaml"

    def scripts(self, *names: str) -> list[Path]:
        """This CLI's scripts of those names."""
        return [SCRIPTS / self.cli.kind / f"{name}.yaml" for name in names]

    def environment(self, emu: Emulate) -> dict[str, str]:
        """The CLI's environment: only the emulator to talk to, the gate from this checkout."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(SRC),
            "DONEGATE_HOME": str(self.donegate_home),
        }
        if self.cli.kind == "claude":
            env |= {
                "ANTHROPIC_BASE_URL": emu.base_url,
                "ANTHROPIC_API_KEY": "test",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1",
                "ENABLE_TOOL_SEARCH": "false",
                "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1",
            }
        elif self.cli.kind == "codex":
            codex_home = self.home / ".codex"
            codex_home.mkdir(exist_ok=True)
            (codex_home / "config.toml").write_text(
                'model = "gpt-test"\nmodel_provider = "emulator"\n\n'
                "[model_providers.emulator]\n"
                'name = "donegate emulator"\n'
                f'base_url = "{emu.base_url}/v1"\n'
                'wire_api = "responses"\n'
                'env_key = "EMULATOR_KEY"\n\n'
                f"[projects.{json.dumps(str(self.work))}]\n"
                'trust_level = "trusted"\n',
                encoding="utf-8",
            )
            env |= {"CODEX_HOME": str(codex_home), "EMULATOR_KEY": "test"}
        else:
            settings = self.home / ".gemini" / "settings.json"
            settings.parent.mkdir(exist_ok=True)
            auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
            settings.write_text(json.dumps(auth), encoding="utf-8")
            env |= {
                "GEMINI_API_KEY": "test",
                "GOOGLE_GEMINI_BASE_URL": emu.base_url,
                "GEMINI_CLI_TRUST_WORKSPACE": "true",
            }
        return env

    def agent_argv(self, prompt: str = PROMPT) -> list[str]:
        """The CLI's own headless command line."""
        if self.cli.kind == "claude":
            tools = "Bash,Write,Agent,TaskCreate,TaskUpdate"
            return [self.binary, "-p", prompt, "--output-format", "json",
                    "--permission-mode", "acceptEdits", "--allowedTools", tools]  # fmt: skip
        if self.cli.kind == "codex":
            return [self.binary, "exec", "--skip-git-repo-check",
                    "--dangerously-bypass-approvals-and-sandbox", prompt]  # fmt: skip
        model = ["-m", self.gemini_model] if self.gemini_model else []
        return [self.binary, "-p", prompt, "--yolo", *model, "-o", "json"]

    def run(self, emu: Emulate, mode: Mode, *, max_continuations: int) -> Run:
        """One gated session, by `mode`; the task file is written first."""
        task_file(self.task, max_continuations=max_continuations)
        env = self.environment(emu)
        if mode == "exec":
            argv = [sys.executable, "-m", "donegate", "exec", "--task", str(self.task),
                    "--json", "--max-continuations", str(max_continuations),
                    "--", *self.agent_argv()]  # fmt: skip
        else:
            # --no-doctor: the doctor's own CLI run is tested in test_doctor_live.py
            install = [sys.executable, "-m", "donegate", "hook", "install", self.cli.kind,
                       "--task", str(self.task), "--dir", str(self.work),
                       "--no-doctor"]  # fmt: skip
            if self.cli.kind == "codex":
                install.append("--trust")
            done = _run(install, self.work, env)
            assert done.returncode == 0, f"hook install failed:\n{done.stdout}\n{done.stderr}"
            argv = self.agent_argv()
        proc = _run(argv, self.work, env)
        summary = None
        if mode == "exec" and proc.stdout.strip():
            summary = json.loads(proc.stdout.strip().splitlines()[-1])
        requests = [r for r in emu.requests if r["kind"] == "model" and not r.get("side_call")]
        return Run(proc.returncode, proc.stdout, proc.stderr, summary, requests, self.donegate_home)


def _run(argv: list[str], cwd: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
