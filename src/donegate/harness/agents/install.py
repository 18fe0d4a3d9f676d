"""``donegate hook install|uninstall``: the gate in a CLI's project config, merged, reversible.

Each CLI reads the same JSON shape (``{"hooks": {EVENT: [{"hooks": [HANDLER, ...]}]}}``) from its
project file: ``.claude/settings.json``, ``.codex/hooks.json``, ``.gemini/settings.json``. Install
appends one group per event holding donegate's handler, with the CLI's ``timeout`` raised and a
matching ``--deadline``; it leaves every other key, group and handler as it was, and a second
install changes nothing. donegate's handlers are recognised by their command
(``... donegate hook NAME --task ABSOLUTE_TASK ...``), so uninstall removes exactly those, then
any group, event list or ``hooks`` object that only they filled, and the file if nothing else is
left in it.

Codex runs a hook only once it is trusted: ``--trust`` asks ``codex app-server`` for the hash of
each handler just written (JSON-RPC ``hooks/list``) and records it in ``$CODEX_HOME/config.toml``
as ``[hooks.state."<file>:<event>:<group>:<handler>"] trusted_hash = ...``, under a comment
naming the task, which uninstall removes again. Codex also loads a project's ``.codex`` folder
only for a project it trusts (``[projects."<dir>"] trust_level = "trusted"``): that choice stays
the user's.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from donegate.errors import UserError
from donegate.harness.agents.base import AgentCLI
from donegate.harness.agents.codex import codex_home, hook_hashes, trust_entries, trust_toml

__all__ = [
    "ConfigPlan",
    "apply_plan",
    "deadline_for",
    "hook_command",
    "is_donegate_hook",
    "merged_hooks",
    "plan_codex_trust",
    "plan_install",
    "plan_uninstall",
]

_TRUST_MARK = "# donegate hook install codex --task "


@dataclass(frozen=True, kw_only=True, slots=True)
class ConfigPlan:
    """One file's change: its text before and after (None: no file)."""

    path: Path
    before: str | None
    after: str | None
    summary: str = ""
    """What applying it does, for a person."""
    notes: tuple[str, ...] = ()
    """Things the user must know (trust, for Codex)."""

    @property
    def changed(self) -> bool:
        """Whether applying it changes the file."""
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff of the change."""
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null",
        )
        return "".join(lines)


def deadline_for(timeout_s: int) -> int:
    """The ``--deadline`` matching a CLI hook timeout: a tenth (at least 10 s) kept in reserve."""
    return max(1, timeout_s - max(10, timeout_s // 10))


def hook_command(agent: AgentCLI, task: Path, *, deadline: int, extra: tuple[str, ...] = ()) -> str:
    """The command line a CLI runs: this interpreter's donegate, the absolute task path."""
    argv = [sys.executable, "-m", "donegate", "hook", agent.name, "--task", _absolute(task)]
    argv += ["--deadline", str(deadline), *extra]
    return shlex.join(argv)


def is_donegate_hook(command: Any, agent: AgentCLI, task: Path) -> bool:
    """Whether a handler's command is donegate's hook for `agent` and `task`."""
    if not isinstance(command, str):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    names = {agent.name, "claude-stop"} if agent.name == "claude" else {agent.name}
    for i in range(len(argv) - 1):
        if argv[i] == "hook" and argv[i + 1] in names and "donegate" in " ".join(argv[:i]):
            rest = argv[i + 2 :]
            return any(
                a == "--task" and j + 1 < len(rest) and rest[j + 1] == _absolute(task)
                for j, a in enumerate(rest)
            )
    return False


def merged_hooks(
    data: Mapping[str, Any], agent: AgentCLI, task: Path, *, command: str | None, timeout_s: int
) -> dict[str, Any]:
    """`data` with donegate's handlers removed, then (when `command`) added once per event."""
    out = json.loads(json.dumps(data))
    hooks = out.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise UserError("its `hooks` is not an object")
    hooks = hooks if isinstance(hooks, dict) else {}
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept.append(group)
                continue
            mine = [h for h in handlers if isinstance(h, dict) and
                    is_donegate_hook(h.get("command"), agent, task)]  # fmt: skip
            if not mine:
                kept.append(group)
            elif len(mine) < len(handlers):
                kept.append({**group, "hooks": [h for h in handlers if h not in mine]})
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if command is not None:
        for event in agent.install_events:
            groups = hooks.setdefault(event, [])
            if not isinstance(groups, list):
                raise UserError(f"its `hooks.{event}` is not a list")
            groups.append({"hooks": [agent.hook_entry(command, timeout_s)]})
    if hooks:
        out["hooks"] = hooks
    else:
        out.pop("hooks", None)
    return dict(out)


def plan_install(
    agent: AgentCLI, task: Path, directory: Path, *, timeout_s: int = 600, trust: bool = False
) -> list[ConfigPlan]:
    """The change that adds the gate to `agent`'s config in `directory`."""
    if not task.is_file():
        raise UserError(f"{task}: no such task file")
    path = directory.resolve() / agent.config_file
    before, data = _read(path)
    command = hook_command(agent, task, deadline=deadline_for(timeout_s))
    merged = merged_hooks(data, agent, task, command=command, timeout_s=timeout_s)
    after = _dump(merged)
    if before is not None and _same(data, agent, task, command=command, timeout_s=timeout_s):
        after = before  # already installed as asked: nothing to write
    notes: tuple[str, ...] = ()
    if agent.name == "codex" and not trust:
        notes = (
            "codex: hooks run only once trusted; rerun with --trust to record their hashes, "
            "or run `codex exec --dangerously-bypass-hook-trust` (and trust the project folder "
            "in $CODEX_HOME/config.toml so Codex loads its .codex/hooks.json)",
        )
    return [ConfigPlan(path=path, before=before, after=after, notes=notes, summary="installed")]


def plan_uninstall(agent: AgentCLI, task: Path, directory: Path) -> list[ConfigPlan]:
    """The change that removes what install added (and Codex trust entries for the task)."""
    path = directory.resolve() / agent.config_file
    before, data = _read(path)
    plans = []
    if before is not None:
        merged = merged_hooks(data, agent, task, command=None, timeout_s=0)
        after: str | None = _dump(merged) if merged else None
        if merged == data:
            after = before
        plans.append(ConfigPlan(path=path, before=before, after=after, summary="uninstalled"))
    else:
        plans.append(ConfigPlan(path=path, before=None, after=None))
    if agent.name == "codex":
        config = codex_home() / "config.toml"
        text = _text(config)
        if text is not None:
            kept = _without_trust(text, task)
            plans.append(ConfigPlan(path=config, before=text, after=kept, summary="untrusted"))
    return plans


def plan_codex_trust(
    agent: AgentCLI, task: Path, directory: Path, *, executable: str | None = None
) -> ConfigPlan:
    """Record the current hash of donegate's Codex hooks in ``$CODEX_HOME/config.toml``.

    Run after the hooks file is written: the hashes are Codex's own, read from
    ``codex app-server`` (``hooks/list``) for `directory`.
    """
    exe = executable or shutil.which("codex")
    if exe is None:
        raise UserError("--trust needs the codex executable on PATH")
    path = directory.resolve() / agent.config_file
    _, data = _read(path)
    commands = [
        h["command"]
        for groups in (data.get("hooks") or {}).values()
        if isinstance(groups, list)
        for g in groups
        if isinstance(g, dict) and isinstance(g.get("hooks"), list)
        for h in g["hooks"]
        if isinstance(h, dict) and is_donegate_hook(h.get("command"), agent, task)
    ]
    listed = hook_hashes(exe, env=os.environ, cwd=directory.resolve())
    entries = trust_entries(listed, commands)
    config = codex_home() / "config.toml"
    before = _text(config)
    base = _without_trust(before or "", task)
    notes: tuple[str, ...] = ()
    if not entries:
        notes = (
            f"codex did not list donegate's hooks for {directory}: trust the project folder "
            '([projects."DIR"] trust_level = "trusted" in config.toml), then rerun --trust',
        )
        return ConfigPlan(path=config, before=before, after=before, notes=notes)
    block = f"\n{_TRUST_MARK}{_absolute(task)}" + trust_toml(entries)
    after = base.rstrip("\n") + ("\n" if base.strip() else "") + block
    return ConfigPlan(path=config, before=before, after=after, summary="trusted")


def apply_plan(plan: ConfigPlan) -> ConfigPlan:
    """Write (or remove) the file as planned; return the plan."""
    if not plan.changed:
        return plan
    if plan.after is None:
        with contextlib.suppress(FileNotFoundError):
            plan.path.unlink()
        with contextlib.suppress(OSError):
            plan.path.parent.rmdir()  # only when empty: it was made for the file
        return replace(plan, summary=f"{plan.summary} (file removed)")
    plan.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = plan.path.with_name(f".{plan.path.name}.donegate-tmp")
    tmp.write_text(plan.after, encoding="utf-8")
    if plan.path.exists():
        shutil.copymode(plan.path, tmp)
    tmp.replace(plan.path)
    return plan


def _read(path: Path) -> tuple[str | None, dict[str, Any]]:
    text = _text(path)
    if text is None or not text.strip():
        return text, {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UserError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return text, data


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from None


def _dump(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _same(
    data: dict[str, Any], agent: AgentCLI, task: Path, *, command: str, timeout_s: int
) -> bool:
    """Whether donegate's handlers are already there exactly as install would write them."""
    wanted = agent.hook_entry(command, timeout_s)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    for event in agent.install_events:
        groups = hooks.get(event)
        if not isinstance(groups, list):
            return False
        found = [
            h
            for g in groups
            if isinstance(g, dict)
            for h in (g.get("hooks") or [])
            if isinstance(h, dict) and is_donegate_hook(h.get("command"), agent, task)
        ]
        if found != [wanted]:
            return False
    return True


def _without_trust(text: str, task: Path) -> str:
    """`text` without the trust block install wrote for `task`."""
    mark = re.escape(f"{_TRUST_MARK}{_absolute(task)}")
    entry = r"\[hooks\.state\.\"[^\"\n]*\"\]\ntrusted_hash = \"[^\"\n]*\"\n"
    return re.sub(rf"\n?{mark}\n(?:\n?{entry})*", "", text)


def _absolute(path: Path) -> str:
    return os.path.abspath(path)
