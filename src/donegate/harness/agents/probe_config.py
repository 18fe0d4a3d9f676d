"""The live probe's scratch copy of one CLI's config, trust carried over and never widened.

Each CLI gets: its project config (donegate's hooks retargeted at the probe task) in the scratch
project, its user config in the scratch HOME, the model API pointed at the emulator, and a
command line for its headless mode, as the real-CLI tests run them (tests/agents_e2e/_agents.py).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from donegate.harness.agents.base import AgentCLI
from donegate.harness.agents.install import is_donegate_hook

__all__ = ["GEMINI_MODEL", "PROBE_PROMPT", "Copy", "rewrite_hooks", "setup"]

PROBE_PROMPT = "donegate hook doctor probe: say one line and stop."
GEMINI_MODEL = "gemini-2.5-flash"
"""Gemini's ``-m``, given so that its model router makes no side call."""

_PROVIDER = "donegate_probe"
_KEY = "donegate-probe"


@dataclass(frozen=True, kw_only=True, slots=True)
class Copy:
    """Where the copy comes from and goes to."""

    agent: AgentCLI
    root: Path
    """The real project folder."""
    work: Path
    """The scratch project folder."""
    home: Path
    """The scratch HOME."""
    env: Mapping[str, str]
    """The caller's environment (where the user's config lives)."""
    task: Path | None
    """Only hooks gating this task are probed (None: any donegate hook)."""
    probe_task: Path


def setup(
    copy: Copy, *, executable: str, base_url: str
) -> tuple[list[str], dict[str, str], tuple[str, ...]]:
    """Write the copy; the CLI's argv, its extra environment, and notes on what was not kept."""
    name = copy.agent.name
    if name == "claude":
        env = _claude(copy, base_url)
        argv = [executable, "-p", PROBE_PROMPT, "--output-format", "json"]
        return argv, env, ()
    if name == "codex":
        env, notes = _codex(copy, executable, base_url)
        argv = [executable, "exec", "--skip-git-repo-check", PROBE_PROMPT]
        return argv, env, notes
    env = _gemini(copy, base_url)
    argv = [executable, "-p", PROBE_PROMPT, "-m", GEMINI_MODEL, "-o", "json"]
    return argv, env, ()


def _project(copy: Copy, relative: str) -> int:
    """Copy one project config file, donegate's hooks retargeted; how many were."""
    data = _json(copy.root / relative)
    if data is None:
        return 0
    out, count = rewrite_hooks(data, copy.agent, copy.task, copy.probe_task)
    _write(copy.work / relative, out)
    return count


def rewrite_hooks(
    data: Mapping[str, Any], agent: AgentCLI, task: Path | None, probe_task: Path
) -> tuple[dict[str, Any], int]:
    """`data` with each donegate hook of `agent` (for `task`, or any) gating `probe_task`."""
    out = json.loads(json.dumps(data))
    count = 0
    hooks = out.get("hooks")
    for groups in hooks.values() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else ():
                command = handler.get("command") if isinstance(handler, dict) else None
                new = _retarget(command, agent, task, probe_task)
                if new is not None:
                    handler["command"] = new
                    count += 1
    return out, count


def _retarget(command: Any, agent: AgentCLI, task: Path | None, probe: Path) -> str | None:
    if not isinstance(command, str) or "donegate" not in command:
        return None
    if task is not None and not is_donegate_hook(command, agent, task):
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if "hook" not in argv:
        return None
    for i, arg in enumerate(argv):
        if arg == "--task" and i + 1 < len(argv):
            argv[i + 1] = str(probe)
            return shlex.join(argv)
        if arg.startswith("--task="):
            argv[i] = f"--task={probe}"
            return shlex.join(argv)
    return None


# -- Claude Code ------------------------------------------------------------------------------


def _claude(copy: Copy, base_url: str) -> dict[str, str]:
    for relative in (".claude/settings.json", ".claude/settings.local.json"):
        _project(copy, relative)
    user = Path(copy.env["CLAUDE_CONFIG_DIR"]) if copy.env.get("CLAUDE_CONFIG_DIR") else None
    user = user or Path(copy.env.get("HOME") or Path.home()) / ".claude"
    config = copy.home / ".claude"
    settings = _json(user / "settings.json")
    if settings is not None:
        out, _ = _retargeted(copy, settings)
        _write(config / "settings.json", out)
    config.mkdir(parents=True, exist_ok=True)
    return {
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": _KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


# -- Codex CLI --------------------------------------------------------------------------------


def _codex(copy: Copy, executable: str, base_url: str) -> tuple[dict[str, str], tuple[str, ...]]:
    from donegate.harness.agents.codex import hook_hashes, trust_entries, trust_toml
    from donegate.harness.agents.doctor import codex_config, codex_listing

    real_home, real = codex_config(copy.env)
    listed = codex_listing(executable, copy.env, copy.root)
    hooks_file = str(copy.root / copy.agent.config_file)
    ours = [h for h in listed or [] if h.get("sourcePath") == hooks_file]
    trusted_keys = {str(h["key"]).removeprefix(hooks_file) for h in ours
                    if h.get("trustStatus") == "trusted"}  # fmt: skip
    notes: tuple[str, ...] = ()
    if listed is None:
        notes = ("codex app-server did not list the real project's hooks; the copy is not "
                 "trusted",)  # fmt: skip
    _project(copy, copy.agent.config_file)
    user_hooks = _json(real_home / "hooks.json")
    codex_home = copy.home / ".codex"
    if user_hooks is not None:
        out, _ = _retargeted(copy, user_hooks)
        _write(codex_home / "hooks.json", out)
    features = real.get("features")
    lines = [f'model = "gpt-probe"\nmodel_provider = "{_PROVIDER}"\n',
             f"[model_providers.{_PROVIDER}]\nname = \"donegate probe\"\n"
             f"base_url = {json.dumps(base_url + '/v1')}\nwire_api = \"responses\"\n"
             "env_key = \"DOCTOR_PROBE_KEY\"\n"]  # fmt: skip
    if isinstance(features, dict):
        flat = {k: v for k, v in features.items() if isinstance(v, bool | int | str)}
        lines.append("[features]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in flat.items()))
    if ours:  # Codex listed the real project's hooks: it trusts that project
        lines.append(f'[projects.{json.dumps(str(copy.work))}]\ntrust_level = "trusted"\n')
    config = codex_home / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("\n".join(lines), encoding="utf-8")
    env = {"CODEX_HOME": str(codex_home), "DOCTOR_PROBE_KEY": _KEY}
    if trusted_keys:
        scratch_file = str(copy.work / copy.agent.config_file)
        probe_env = {**copy.env, "HOME": str(copy.home), **env}
        mine = hook_hashes(executable, env=probe_env, cwd=copy.work)
        keep = [h for h in mine if str(h.get("key", "")).removeprefix(scratch_file)
                in trusted_keys and str(h.get("key", "")).startswith(scratch_file)]  # fmt: skip
        entries = trust_entries(keep, [str(h.get("command")) for h in keep])
        with config.open("a", encoding="utf-8") as handle:
            handle.write(trust_toml(entries))
    return env, notes


# -- Gemini CLI -------------------------------------------------------------------------------


def _gemini(copy: Copy, base_url: str) -> dict[str, str]:
    from donegate.harness.agents.doctor import gemini_home, gemini_trusted

    _project(copy, copy.agent.config_file)
    real = gemini_home(copy.env)
    settings = _json(real / "settings.json") or {}
    out, _ = _retargeted(copy, settings)
    security = _object(out.get("security"))
    auth = _object(security.get("auth"))
    out["security"] = {**security, "auth": {**auth, "selectedType": "gemini-api-key"}}
    base = copy.home / ".gemini"
    _write(base / "settings.json", out)
    trusted = gemini_trusted(copy.root, copy.env, settings=settings)
    _write(base / "trustedFolders.json", {str(copy.work): "TRUST_FOLDER"} if trusted else {})
    env = {"GEMINI_CLI_HOME": str(copy.home), "GEMINI_API_KEY": _KEY,
           "GOOGLE_GEMINI_BASE_URL": base_url}  # fmt: skip
    if copy.env.get("GEMINI_CLI_TRUST_WORKSPACE"):
        env["GEMINI_CLI_TRUST_WORKSPACE"] = copy.env["GEMINI_CLI_TRUST_WORKSPACE"]
    return env


# -- shared -----------------------------------------------------------------------------------


def _retargeted(copy: Copy, data: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    return rewrite_hooks(data, copy.agent, copy.task, copy.probe_task)


def _object(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _json(path: Path) -> dict[str, Any] | None:
    from donegate.harness.agents.doctor import read_json

    return read_json(path)


def _write(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
