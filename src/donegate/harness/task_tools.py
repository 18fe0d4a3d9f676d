"""A task's tools: the built-ins confined to its workdir and its agent world, and user tools by
import path; which of them have side effects (their calls go through the ledger on resume)."""

from __future__ import annotations

import importlib
import sys
from dataclasses import replace
from pathlib import Path

from donegate.errors import UserError
from donegate.harness.builtin_tools import Workspace, workspace_tool
from donegate.harness.checklist import Checklist
from donegate.harness.protect import Manifest
from donegate.harness.spec import ImportTool, TaskSpec
from donegate.harness.world import AgentWorld, agent_world
from donegate.records.checklist import CHECKLIST_TOOL
from donegate.sandbox import resolve
from donegate.tools import Tool

__all__ = ["build_tools", "side_effect_tools"]

_SIDE_EFFECTS = {"write_file": True, "run_command": True, "read_file": False, "list_dir": False}
_IDEMPOTENT = frozenset({"write_file"})  # writing the same content again changes nothing more


def build_tools(
    spec: TaskSpec,
    root: Path,
    checklist: Checklist,
    *,
    protected: Manifest | None = None,
    world: AgentWorld | None = None,
) -> list[Tool]:
    """The task's tools: built-ins confined to `root` (``write_file`` refusing `protected`
    paths, ``run_command`` starting its program in `world`, by default the task's agent world
    under ``DONEGATE_ISOLATION``), user tools by import path."""
    guard = protected.covers_path if protected is not None and not protected.empty else None
    workspace = Workspace(
        root,
        max_read_bytes=spec.max_read_bytes,
        max_command_timeout=spec.max_command_timeout,
        protected=guard,
        world=world or agent_world(spec, workdir=root, isolation=resolve()),
    )
    tools: list[Tool] = []
    for ref in spec.tools:
        if isinstance(ref, ImportTool):
            tools.append(_import_tool(ref, root))
        elif ref == CHECKLIST_TOOL:
            tools.append(checklist.tool())
        else:
            tools.append(
                workspace_tool(
                    workspace, ref, side_effect=_SIDE_EFFECTS[ref], idempotent=ref in _IDEMPOTENT
                )
            )
    return tools


def side_effect_tools(spec: TaskSpec) -> frozenset[str]:
    """Names of `spec`'s tools that get idempotency keys (their calls go through the ledger)."""
    return frozenset(
        ref.tool_name if isinstance(ref, ImportTool) else ref
        for ref in spec.tools
        if (ref.side_effect if isinstance(ref, ImportTool) else _SIDE_EFFECTS.get(ref, False))
    )


def _import_tool(ref: ImportTool, root: Path) -> Tool:
    module_name, _, attr = ref.import_path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError:
        sys.path.insert(0, str(root))  # task-local tool modules live in the workdir
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise UserError(f"tool {ref.import_path}: no module named {exc.name!r}") from None
        finally:
            sys.path.remove(str(root))
    obj = getattr(module, attr, None)
    if isinstance(obj, Tool):
        return replace(obj, name=ref.tool_name, side_effect=ref.side_effect)
    if not callable(obj):
        raise UserError(f"tool {ref.import_path}: {module_name} has no function {attr!r}")
    return Tool.from_function(obj, name=ref.tool_name, side_effect=ref.side_effect)
