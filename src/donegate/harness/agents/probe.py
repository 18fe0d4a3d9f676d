"""The hook doctor's live probe: the real CLI, headless, against a local model, with the hook.

Reading the config says what *should* happen; only running the CLI shows that its hook fires.
The probe copies the project's and the user's config of one CLI into a scratch folder, points
every donegate hook there at a probe task of its own (one check that never passes,
``max_continuations: 1``: the gate blocks the first stop and lets the second through), and runs
the CLI headless with the model API on a local emulator serving two text turns. The proof is
twofold, and both halves must hold: the gate's own record in the scratch data directory shows
a ``blocked`` round, and a later model request carries the probe check's name, so the CLI
delivered the block to the model.

Trust is path-keyed, so the copy carries the original's trust, never more: the scratch project
is trusted by Codex only when Codex lists the real project's hooks (it trusts the project), and
a donegate hook there is trusted only when Codex reports the real one ``trusted``; a Gemini
scratch folder is trusted only when the real one is. Claude Code's managed settings are read by
the CLI from their real place. The emulator is the caller's (``cli`` owns `donegate.testing`):
`prepare_probe` takes its base URL, `run_probe` a function returning its request log.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from donegate.config import DATA_DIR_ENV
from donegate.harness.agents import probe_config
from donegate.harness.agents.base import AgentCLI
from donegate.harness.agents.probe_config import PROBE_PROMPT, rewrite_hooks

__all__ = [
    "PROBE_CHECK",
    "PROBE_PROMPT",
    "PROBE_TURNS",
    "Probe",
    "ProbeResult",
    "prepare_probe",
    "probe_script",
    "rewrite_hooks",
    "run_probe",
]

PROBE_TASK_ID = "donegate-doctor-probe"
PROBE_CHECK = "DONEGATE-DOCTOR-PROBE"
"""The probe check's name: only the gate's reason carries it to the model."""
PROBE_TURNS = ("Probe turn one: nothing to do.", "Probe turn two: stopping.")
"""The model's two answers: the stop the gate blocks, and the one it lets through."""
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "VIRTUAL_ENV", "TMPDIR", "SYSTEMROOT")
_OUTPUT_TAIL = 600


@dataclass(frozen=True, kw_only=True, slots=True)
class Probe:
    """A prepared probe: the command line, its environment and the scratch folders."""

    agent: AgentCLI
    work: Path
    """The scratch project folder (the CLI's cwd)."""
    data: Path
    """The scratch ``DONEGATE_HOME`` the probe's hook writes its record to."""
    argv: list[str]
    env: dict[str, str]
    notes: tuple[str, ...] = ()
    """What the copy could not carry over (shown with a failed probe)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ProbeResult:
    """What the probe saw."""

    fired: bool
    """The gate's record shows the hook ran and blocked a stop."""
    delivered: bool
    """A model request after the block carries the probe check's name."""
    exit_code: int | None
    """The CLI's exit code (None: killed at the time limit)."""
    seconds: float
    output: str
    """The tail of what the CLI printed, for a failed probe."""

    @property
    def ok(self) -> bool:
        """The hook fired, blocked, and the CLI handed the block to the model."""
        return self.fired and self.delivered

    def line(self, agent: AgentCLI) -> str:
        """One line for a person."""
        ran = f"{agent.title} ran headless against a local emulator"
        if self.ok:
            return (f"live probe: {ran}; the gate's hook fired, blocked once, and its reason "
                    f"reached the model ({self.seconds:.0f}s)")  # fmt: skip
        how = "was stopped at the time limit" if self.exit_code is None else (
            f"exited {self.exit_code}")  # fmt: skip
        if self.fired:
            return (f"live probe: {ran} and {how}; the gate's hook blocked, but the block never "
                    "reached the model")  # fmt: skip
        return f"live probe: {ran} and {how}; the gate's hook never fired"


def probe_script() -> dict[str, Any]:
    """The emulator's script: two text turns, for any wire format."""
    return {"prompt": PROBE_PROMPT, "turns": [{"text": t} for t in PROBE_TURNS]}


def prepare_probe(
    agent: AgentCLI,
    directory: Path,
    *,
    scratch: Path,
    env: Mapping[str, str],
    executable: str,
    base_url: str,
    task: Path | None = None,
) -> Probe:
    """Write the scratch copy of `agent`'s config in `scratch`; the command that probes it."""
    root = directory.resolve()
    work, home, data = scratch / "work", scratch / "home", scratch / "donegate"
    for folder in (work, home, data):
        folder.mkdir(parents=True, exist_ok=True)
    probe_task = scratch / "probe-task.yaml"
    probe_task.write_text(yaml.safe_dump({
        "id": PROBE_TASK_ID, "prompt": PROBE_PROMPT, "max_continuations": 1,
        "checks": [{"name": PROBE_CHECK, "file_exists": "donegate-doctor-probe.never"}],
    }, sort_keys=False), encoding="utf-8")  # fmt: skip
    base = {k: env[k] for k in _ENV_KEEP if k in env}
    base |= {"HOME": str(home), DATA_DIR_ENV: str(data)}
    copy = probe_config.Copy(agent=agent, root=root, work=work, home=home, env=env,
                             task=task, probe_task=probe_task)  # fmt: skip
    argv, extra, notes = probe_config.setup(copy, executable=executable, base_url=base_url)
    return Probe(agent=agent, work=work, data=data, argv=argv, env=base | extra, notes=notes)


def run_probe(
    probe: Probe, *, requests: Callable[[], Sequence[Mapping[str, Any]]], timeout: float = 120.0
) -> ProbeResult:
    """Run the CLI once (killed after `timeout` seconds); read the gate's record and the log."""
    started = time.monotonic()
    proc = subprocess.Popen(
        probe.argv, cwd=probe.work, env=probe.env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        code = None
        out = b""
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the npm launcher and what it started
        if proc.poll() is None:
            out = out + (proc.communicate()[0] or b"")
    seconds = time.monotonic() - started
    return ProbeResult(
        fired=_blocked(probe.data),
        delivered=_delivered(requests()),
        exit_code=code,
        seconds=seconds,
        output=out.decode("utf-8", "replace")[-_OUTPUT_TAIL:],
    )


def _blocked(data: Path) -> bool:
    """Whether the gate's record (signed, validated on read) has a blocked round."""
    from donegate.harness.agents.state import StateStore

    store = StateStore(data / "hooks")
    for path in sorted((data / "hooks" / PROBE_TASK_ID).glob("*.json")):
        try:
            state = store.load(path)
        except Exception:  # a record we cannot trust proves nothing
            continue
        if state is not None and any(r.outcome == "blocked" for r in state.rounds):
            return True
    return False


def _delivered(requests: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a model request (the one after the block) carries the probe check's name."""
    model = [r for r in requests if r.get("kind") == "model" and not r.get("side_call")]
    return any(PROBE_CHECK in json.dumps(r.get("body")) for r in model[1:])
