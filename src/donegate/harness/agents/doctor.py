"""What stands between an installed gate and its hook firing, read from the CLIs' own config.

Every CLI can skip a hook without a word: Codex runs no hook it has not trusted (codex#46210)
and reads a project's ``.codex`` only in a trusted project; Gemini CLI drops a project's hooks
outside a trusted folder; ``disableAllHooks: true`` in any Claude Code settings file, or a
managed settings file of a higher scope allowing only managed hooks, turns the gate off. A CLI
also kills a hook that outlives its timeout, and a killed hook lets the agent stop.

`diagnose` reads the settings, trust and version statically (one line per finding, a
`Obstacle` that says whether it stops the hook); for Codex's trust it asks Codex itself
(``codex app-server`` ``hooks/list`` reports each hook's ``trustStatus``) when given its
executable. ``donegate hook doctor`` prints them for an installed hook (``installed=True``),
then watches the hook fire (`donegate.harness.agents.probe`); ``donegate exec`` refuses a run,
before the agent starts, when a finding would stop the hooks of its own per-run config
(``installed=False``).
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from donegate.harness.agents.base import AgentCLI
from donegate.harness.agents.install import deadline_for, is_donegate_hook
from donegate.harness.spec import TaskSpec

__all__ = [
    "MANAGED_CLAUDE_SETTINGS",
    "TESTED",
    "Obstacle",
    "cli_version",
    "codex_config",
    "codex_listing",
    "codex_project",
    "diagnose",
    "gemini_home",
    "gemini_trusted",
    "read_json",
    "version_finding",
]

TESTED: dict[str, tuple[str, str]] = {
    "claude": ("2.1.197", "2.1.332"),
    "codex": ("0.171.0", "0.171.0"),
    "gemini": ("0.61.0", "0.61.0"),
}
"""The oldest and newest version of each CLI the hooks were measured on (tests/agents_e2e)."""
MANAGED_CLAUDE_SETTINGS = Path("/etc/claude-code/managed-settings.json")
"""Claude Code's managed (enterprise) settings on Linux: the highest scope."""
_DEFAULT_CHECK_TIMEOUT = 120.0
_GEMINI_DEFAULT_TIMEOUT_S = 60


@dataclass(frozen=True, kw_only=True, slots=True)
class Obstacle:
    """One thing in the way of the hook, as one line."""

    cause: str
    """``disabled hooks``, ``untrusted hooks``, ``untrusted folder``, ``hook timeout``,
    ``version``, ``not installed``."""
    line: str
    """What a person reads: the cause, the file, and what to do."""
    blocks: bool
    """Whether the hook will not fire (or will be killed) because of it."""


def diagnose(
    agent: AgentCLI,
    directory: Path,
    *,
    env: Mapping[str, str],
    spec: TaskSpec | None = None,
    task: Path | None = None,
    installed: bool = True,
    version: str | None = None,
    executable: str | None = None,
) -> list[Obstacle]:
    """The findings for `agent`'s hooks in `directory` (its project), by its own config.

    With `executable` (Codex), the hooks' trust is what ``codex app-server`` reports, not a
    reading of ``config.toml``.
    """
    root = directory.resolve()
    found: list[Obstacle] = []
    if agent.name == "claude":
        found += _claude(agent, root, env, task=task, installed=installed)
    elif agent.name == "codex" and installed:
        found += _codex(agent, root, env, task=task, executable=executable)
    elif agent.name == "gemini" and installed:
        found += _gemini(agent, root, env, task=task)
    if installed and spec is not None:
        found += _timeouts(agent, root, env, spec, task=task)
    if version is not None:
        found += version_finding(agent, version)
    return found


def version_finding(agent: AgentCLI, version: str) -> list[Obstacle]:
    """A finding when `version` (what ``--version`` printed) is outside `TESTED`."""
    span = TESTED.get(agent.name)
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", version)
    if span is None or match is None:
        return []
    have = tuple(int(p) for p in match.groups())
    low, high = (tuple(int(p) for p in v.split(".")) for v in span)
    if low <= have <= high:
        return []
    line = (f"version: {agent.title} {match.group(0)} is outside the tested range "
            f"{span[0]} to {span[1]}; its hooks may behave differently")  # fmt: skip
    return [Obstacle(cause="version", line=line, blocks=False)]


# -- Claude Code ------------------------------------------------------------------------------


def _claude_files(root: Path, env: Mapping[str, str]) -> list[tuple[str, Path]]:
    user = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else None
    if user is None:
        user = Path(env.get("HOME") or Path.home()) / ".claude"
    return [("managed", MANAGED_CLAUDE_SETTINGS), ("user", user / "settings.json"),
            ("project", root / ".claude" / "settings.json"),
            ("local", root / ".claude" / "settings.local.json")]  # fmt: skip


def _claude(
    agent: AgentCLI, root: Path, env: Mapping[str, str], *, task: Path | None, installed: bool
) -> list[Obstacle]:
    out = []
    handlers = []
    for scope, path in _claude_files(root, env):
        data = _json(path)
        if data is None:
            continue
        if data.get("disableAllHooks") is True:
            out.append(Obstacle(cause="disabled hooks",
                                line=f"disabled hooks: `disableAllHooks: true` in "
                               f"{path} ({scope} settings) turns every Claude Code hook off, "
                               "the gate's too", blocks=True))  # fmt: skip
        if scope == "managed" and data.get("allowManagedHooksOnly") is True:
            out.append(Obstacle(cause="disabled hooks",
                                line=f"disabled hooks: {path} (managed settings, "
                               "a higher scope) sets `allowManagedHooksOnly: true`: only "
                               "managed hooks run, not the gate's", blocks=True))  # fmt: skip
        if scope != "managed":
            handlers += [(path, h) for h in _handlers(data, "Stop")]
    if installed:
        out += _installed(agent, root, task, handlers, "a Stop hook")
    return out


# -- Codex CLI --------------------------------------------------------------------------------


def codex_config(env: Mapping[str, str]) -> tuple[Path, dict[str, Any]]:
    """``$CODEX_HOME`` (or ``~/.codex``) and its ``config.toml`` parsed (empty when unreadable)."""
    home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else None
    home = home or Path(env.get("HOME") or Path.home()) / ".codex"
    try:
        config = tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        config = {}
    return home, config


def codex_project(directory: Path) -> Path:
    """The folder Codex keys a project's trust by: the git root above `directory`, else it.

    Measured on 0.171.0: a trusted parent folder does not trust a folder below it, and in a
    git repository only the repository root's entry counts.
    """
    root = directory.resolve()
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            return folder
    return root


def codex_listing(
    executable: str | None, env: Mapping[str, str], directory: Path
) -> list[dict[str, Any]] | None:
    """The hooks Codex itself lists for `directory` (``codex app-server`` ``hooks/list``), each
    with its ``trustStatus`` (``trusted``, ``untrusted``, ``modified``); None when it cannot say."""
    if executable is None:
        return None
    from donegate.errors import UserError
    from donegate.harness.agents.codex import hook_hashes

    try:
        return hook_hashes(executable, env=env, cwd=directory.resolve())
    except UserError:
        return None


def _codex(
    agent: AgentCLI,
    root: Path,
    env: Mapping[str, str],
    *,
    task: Path | None,
    executable: str | None,
) -> list[Obstacle]:
    hooks_file = root / agent.config_file
    data = _json(hooks_file)
    handlers = [(hooks_file, h) for h in _handlers(data or {}, "Stop")]
    missing = _installed(agent, root, task, handlers, "a Stop hook")
    if missing:
        return missing
    home, config = codex_config(env)
    config_path = home / "config.toml"
    project = codex_project(root)
    listed = codex_listing(executable, env, root)
    if listed is not None:
        return _codex_listed(agent, hooks_file, config_path=config_path, project=project,
                             listed=listed, task=task)  # fmt: skip
    out = []
    projects = config.get("projects") if isinstance(config.get("projects"), dict) else {}
    entry = (projects or {}).get(str(project))
    if not (isinstance(entry, dict) and entry.get("trust_level") == "trusted"):
        out.append(_untrusted_project(hooks_file, config_path, project))
    hooks = config.get("hooks") if isinstance(config.get("hooks"), dict) else {}
    state = (hooks or {}).get("state")
    keys = [k for k, v in (state or {}).items()
            if isinstance(v, dict) and v.get("trusted_hash")
            and k.startswith(f"{hooks_file}:stop:")] if isinstance(state, dict) else []  # fmt: skip
    if not keys:
        out.append(Obstacle(cause="untrusted hooks",
                            line=f"untrusted hooks: codex exec skips {hooks_file}'s "
                           f"Stop hook without a word: no trusted_hash for it in {config_path} "
                           "(donegate hook install codex --trust)", blocks=True))  # fmt: skip
    return out


def _untrusted_project(hooks_file: Path, config_path: Path, project: Path) -> Obstacle:
    return Obstacle(cause="untrusted folder",
                    line=f"untrusted project: Codex reads {hooks_file} only in a trusted "
                   f"project; {config_path} lacks [projects.{json.dumps(str(project))}] "
                   'trust_level = "trusted"', blocks=True)  # fmt: skip


def _codex_listed(
    agent: AgentCLI,
    hooks_file: Path,
    *,
    config_path: Path,
    project: Path,
    listed: list[dict[str, Any]],
    task: Path | None,
) -> list[Obstacle]:
    """The trust findings as Codex itself reports them: the exact entry that is missing."""
    stops = [h for h in listed if h.get("sourcePath") == str(hooks_file)
             and h.get("eventName") == "stop" and _ours(agent, h, task)]  # fmt: skip
    if not any(h.get("sourcePath") == str(hooks_file) for h in listed):
        return [_untrusted_project(hooks_file, config_path, project)]
    if any(h.get("trustStatus") == "trusted" for h in stops):
        return []
    out = []
    for hook in stops[:1] or [{}]:
        key = hook.get("key", f"{hooks_file}:stop:?:?")
        status = hook.get("trustStatus", "unlisted")
        why = ("its trusted_hash is for an older version of the hook" if status == "modified"
               else "no trusted_hash for it")  # fmt: skip
        out.append(Obstacle(cause="untrusted hooks",
                            line=f"untrusted hooks: codex exec skips {hooks_file}'s Stop hook "
                           f"without a word (Codex reports it {status}: {why}); {config_path} "
                           f"lacks [hooks.state.{json.dumps(key)}] trusted_hash = "
                           f"{json.dumps(hook.get('currentHash', '?'))} "
                           "(donegate hook install codex --trust)", blocks=True))  # fmt: skip
    return out


# -- Gemini CLI -------------------------------------------------------------------------------


def gemini_home(env: Mapping[str, str]) -> Path:
    """Gemini CLI's user folder: ``$GEMINI_CLI_HOME/.gemini``, else ``~/.gemini``."""
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()) / ".gemini"


def gemini_trusted(
    root: Path, env: Mapping[str, str], *, settings: Mapping[str, Any] | None = None
) -> bool:
    """Whether Gemini CLI trusts `root`: by env, disabled folder trust, or trustedFolders.json."""
    if env.get("GEMINI_CLI_TRUST_WORKSPACE", "").lower() == "true":
        return True
    base = gemini_home(env)
    user = settings if settings is not None else (_json(base / "settings.json") or {})
    security = user.get("security") if isinstance(user.get("security"), dict) else {}
    folder_trust = (security or {}).get("folderTrust")
    if isinstance(folder_trust, dict) and folder_trust.get("enabled") is False:
        return True
    rules = _json(base / "trustedFolders.json") or {}
    trusted = False
    for key, rule in rules.items():
        folder = Path(key)
        scope = folder.parent if rule == "TRUST_PARENT" else folder
        if rule in ("TRUST_FOLDER", "TRUST_PARENT") and (root == scope or scope in root.parents):
            trusted = True
        if rule == "DO_NOT_TRUST" and root == folder:
            return False
    return trusted


def _gemini(
    agent: AgentCLI, root: Path, env: Mapping[str, str], *, task: Path | None
) -> list[Obstacle]:
    settings = root / agent.config_file
    handlers = [(settings, h) for h in _handlers(_json(settings) or {}, "AfterAgent")]
    missing = _installed(agent, root, task, handlers, "an AfterAgent hook")
    if missing:
        return missing
    if gemini_trusted(root, env):
        return []
    base = gemini_home(env)
    return [Obstacle(cause="untrusted folder",
                     line=f"untrusted folder: Gemini CLI skips {settings}'s hooks "
                    f"(and --yolo) outside a trusted folder; trust {root} in "
                    f"{base / 'trustedFolders.json'} or set GEMINI_CLI_TRUST_WORKSPACE=true",
                    blocks=True)]  # fmt: skip


# -- shared -----------------------------------------------------------------------------------


def _installed(
    agent: AgentCLI,
    root: Path,
    task: Path | None,
    handlers: list[tuple[Path, dict[str, Any]]],
    what: str,
) -> list[Obstacle]:
    ours = [h for _, h in handlers if _ours(agent, h, task)]
    if ours:
        return []
    where = root / agent.config_file
    return [Obstacle(cause="not installed",
                     line=f"not installed: no donegate {what} for this task in "
                    f"{where} (donegate hook install {agent.name} --task TASK)",
                    blocks=True)]  # fmt: skip


def _ours(agent: AgentCLI, handler: Mapping[str, Any], task: Path | None) -> bool:
    command = handler.get("command")
    if task is not None:
        return is_donegate_hook(command, agent, task)
    return isinstance(command, str) and "donegate" in command and " hook " in command


def _timeouts(
    agent: AgentCLI, root: Path, env: Mapping[str, str], spec: TaskSpec, *, task: Path | None
) -> list[Obstacle]:
    path = root / agent.config_file
    event = {"claude": "Stop", "codex": "Stop", "gemini": "AfterAgent"}.get(agent.name, "Stop")
    ours = [h for h in _handlers(_json(path) or {}, event) if _ours(agent, h, task)]
    longest = max(((c.timeout or _DEFAULT_CHECK_TIMEOUT, c.name) for c in spec.checks),
                  default=None)  # fmt: skip
    if not ours or longest is None:
        return []
    raw = ours[0].get("timeout")
    if agent.name == "gemini":
        seconds = raw / 1000 if isinstance(raw, int | float) else _GEMINI_DEFAULT_TIMEOUT_S
    else:
        seconds = raw if isinstance(raw, int | float) else 600
    usable = deadline_for(int(seconds))
    need, name = longest
    if usable >= need:
        return []
    line = (f"hook timeout: {path} gives the hook {seconds:g}s ({usable}s for checks), shorter "
            f"than check {name!r} may take ({need:g}s); the CLI kills a late hook and the agent "
            f"stops (donegate hook install {agent.name} --timeout {int(need) + 60})")  # fmt: skip
    return [Obstacle(cause="hook timeout", line=line, blocks=True)]


def _handlers(data: Mapping[str, Any], event: str) -> list[dict[str, Any]]:
    hooks = data.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    if not isinstance(groups, list):
        return []
    return [h for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"] if isinstance(h, dict)]  # fmt: skip


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from a config file (None: missing, unreadable or not an object)."""
    return _json(path)


def _json(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read(4 * 1024 * 1024))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def cli_version(executable: str, env: dict[str, str]) -> str | None:
    """The first line `executable --version` prints (None when it prints nothing in 20 s)."""
    try:
        proc = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=20, env=env,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    line = (proc.stdout or proc.stderr).strip().splitlines()
    return line[0][:80] if line else None
