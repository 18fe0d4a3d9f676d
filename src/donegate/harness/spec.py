"""Task specs: what the agent must do and how the harness will know it is done.

A task comes from a YAML or JSON file (`load_task`) or is built in Python (`TaskSpec(...)`,
`TaskSpec.model_validate(dict)`). Every model is frozen and rejects unknown keys, so a typo in a
task file is an error naming the file and the field rather than a check that silently never runs.

In a file, each check is a mapping with exactly one kind key, plus optional ``name`` and
``timeout`` (the check models are in `donegate.harness.spec_checks`, re-exported here)::

    checks:
      - run: pytest -q
        timeout: 300
      - file_contains: {path: src/app.py, text: "def main"}
      - sql: {url: "sqlite:///app.db", query: "select 1 from users"}
    protect: [tests/**]        # the agent may not change, add or delete these
    closure: checks            # the default: at least one check; or human, or model
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import (
    AfterValidator,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from donegate._files import load_data
from donegate.errors import TaskSpecError
from donegate.harness.custody import withhold
from donegate.harness.protect import check_pattern
from donegate.harness.spec_checks import (
    CHECK_KINDS,
    CheckSpec,
    FileContains,
    FileContainsCheck,
    FileExistsCheck,
    FileMatches,
    FileMatchesCheck,
    Http,
    HttpCheck,
    HttpUrl,
    ImportPath,
    JsonSchema,
    JsonSchemaCheck,
    PythonCheck,
    RunCheck,
    SpecModel,
    Sql,
    SqlCheck,
    Tests,
    TestsCheck,
    TestsExpect,
    keyed_union,
    shaped,
)
from donegate.harness.spec_limits import BudgetSpec, PriceSpec, SandboxSpec
from donegate.records.task import task_id_problem

__all__ = [
    "BUILTIN_TOOLS",
    "CHECK_KINDS",
    "BudgetSpec",
    "CheckSpec",
    "CommandTarget",
    "FileContains",
    "FileContainsCheck",
    "FileExistsCheck",
    "FileMatches",
    "FileMatchesCheck",
    "Http",
    "HttpCheck",
    "ImportTool",
    "JsonSchema",
    "JsonSchemaCheck",
    "NotifyTarget",
    "PriceSpec",
    "PythonCheck",
    "RunCheck",
    "SandboxSpec",
    "Sql",
    "SqlCheck",
    "TaskSpec",
    "TaskSpecError",
    "Tests",
    "TestsCheck",
    "TestsExpect",
    "ToolRef",
    "Webhook",
    "WebhookTarget",
    "load_task",
    "task_problems",
    "validate_task",
    "with_budget",
]

BuiltinTool: TypeAlias = Literal[
    "read_file", "write_file", "list_dir", "run_command", "update_checklist"
]
BUILTIN_TOOLS: tuple[BuiltinTool, ...] = get_args(BuiltinTool)
"""Tools the harness provides by name; a task that lists no tools gets all of them."""


def _task_id(value: str) -> str:
    problem = task_id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _allow_pattern(value: str) -> str:
    if value.startswith("!"):
        raise ValueError(f"{value!r}: allow lists paths to let through; '!' has no use here")
    return check_pattern(value)


TaskId = Annotated[str, Field(min_length=1), AfterValidator(_task_id)]
ModelName = Annotated[str, shaped(r"[\w.-]+:.+", "'provider:model' or 'script:FILE'")]


class ImportTool(SpecModel):
    """A user tool imported by path; ``side_effect`` tools get idempotency keys."""

    import_path: ImportPath = Field(validation_alias="import", serialization_alias="import")
    """``package.module:function``; written ``import:`` in a task file."""
    side_effect: bool
    """Whether calling it changes the world (must be said: it decides replay on resume)."""
    name: str | None = Field(default=None, min_length=1)
    """The tool name the model sees; the function's name when unset."""

    @property
    def tool_name(self) -> str:
        """The name the model calls it by."""
        return self.name or self.import_path.rpartition(":")[2]


ToolRef: TypeAlias = Annotated[
    Annotated[BuiltinTool, Tag("tool:builtin")] | Annotated[ImportTool, Tag("tool:import")],
    Discriminator(lambda v: "tool:builtin" if isinstance(v, str) else "tool:import"),
]
"""A built-in tool by name, or a user tool by import path."""

_TAGS = {f"check:{k}" for k in CHECK_KINDS} | {"tool:builtin", "tool:import"}
_TAGS |= {"notify:webhook", "notify:command"}


class Webhook(SpecModel):
    """Where a webhook notification is POSTed, and extra headers (an auth token, say)."""

    url: HttpUrl
    """The receiver's http(s) URL."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers (an auth token, say); never shown to the model."""


class WebhookTarget(SpecModel):
    """``{webhook: {url, headers}}``: POST the outcome as JSON with an ``Idempotency-Key``."""

    webhook: Webhook
    """Where to POST and with which headers."""


class CommandTarget(SpecModel):
    """``{command: [argv...]}``: run a program with the outcome on stdin and
    ``DONEGATE_IDEMPOTENCY_KEY`` set; ``{task_id}``, ``{status}``, ``{idempotency_key}``,
    ``{certificate_path}`` and ``{report_path}`` (a file holding the JSON, removed after the
    command) in an argument are replaced (never through a shell). The certificate itself is never
    argv text: it can outgrow the kernel's argument limit, so ``{certificate}`` is refused."""

    command: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    """The program and its arguments (an argv list, never a shell line)."""

    @field_validator("command")
    @classmethod
    def _no_documents_in_argv(cls, argv: list[str]) -> list[str]:
        for name in ("certificate", "report"):
            if any("{" + name + "}" in a for a in argv):
                raise ValueError(
                    f"{{{name}}} in an argument is refused (a {name} can exceed the argument "
                    f"limit); use {{{name}_path}} or read the outcome JSON on stdin"
                )
        return argv


NotifyTarget: TypeAlias = Annotated[
    Annotated[WebhookTarget, Tag("notify:webhook")]
    | Annotated[CommandTarget, Tag("notify:command")],
    keyed_union("notify", ("webhook", "command"), "notify target"),
]
"""One place a task's final outcome is sent (through the worker's outbox)."""


class TaskSpec(SpecModel):
    """One task: the prompt, how its completion is decided, and what the agent may use."""

    id: TaskId
    """Stable task id (``[A-Za-z0-9._-]{1,128}``); it prefixes idempotency keys and names
    certificates."""
    prompt: str = Field(min_length=1)
    """The first user message."""
    system: str | None = None
    """An optional system prompt."""
    checklist: list[str] = Field(default_factory=list)
    """Item names the model ticks with ``update_checklist``; open items block completion."""
    completion_condition: str = ""
    """Stated up front and given to the verifier."""
    checks: list[CheckSpec] = Field(default_factory=list)
    """Acceptance checks the harness runs at each text-only end of turn."""
    protect: list[Annotated[str, AfterValidator(check_pattern)]] = Field(default_factory=list)
    """Globs (relative to the workdir) of files the agent may not change, add or delete."""
    allow: list[Annotated[str, AfterValidator(_allow_pattern)]] = Field(default_factory=list)
    """Globs of files the agent may add or change although they change how checks run (a
    ``conftest.py``, a module named like the standard library's...: `donegate.harness.tamper`)."""
    closure: Literal["checks", "human", "model"] = "checks"
    """Who closes the task: ``checks`` (at least one required), ``human`` (a claim that passes
    ends ``awaiting_review`` until a person approves it), ``model`` (the certificate says no
    mechanical check backed it)."""
    verifier: ModelName | None = None
    """A separate model (``provider:name`` or ``script:FILE``); no verifier gate when unset."""
    max_continuations: int = Field(default=3, ge=0)
    """Automatic continuations before the task is escalated to a human."""
    max_steps: int = Field(default=50, ge=1)
    """Model calls allowed in the whole run."""
    tools: list[ToolRef] = Field(default_factory=lambda: list[ToolRef](BUILTIN_TOOLS))
    """Tools the agent may call; all built-ins when unset."""
    workdir: str | None = None
    """The directory tools and checks are confined to; the current directory when unset."""
    type: str | None = None
    """A task type for telemetry (stop reasons are broken out by it)."""
    model: ModelName | None = None
    """The agent model (``provider:name`` or ``script:FILE``) unless the caller overrides it."""
    check_path: list[str] = Field(default_factory=list)
    """Folders ``python:`` checks import from, after the stdlib and installed packages.

    Never the workdir unless listed here. `load_task` resolves them against the task file's
    folder and puts that folder first; in a TaskSpec built in Python a relative folder resolves
    against the current directory, and with none the checks import from the caller's
    ``sys.path`` minus the workdir.
    """
    max_command_timeout: float = Field(default=600, gt=0)
    """Seconds ``run_command`` may run whatever timeout the model asks for."""
    max_read_bytes: int = Field(default=256 * 1024, ge=1024)
    """Bytes ``read_file`` returns at most; a longer file is cut, and the result says so."""
    sandbox: SandboxSpec = Field(default_factory=SandboxSpec)
    """What the agent's programs see in the sandbox besides the workdir (docs/tasks.md)."""
    budget: BudgetSpec | None = None
    """What the task's model calls may spend in all; no limit when unset. A call that cannot
    fit is not made: the task ends ``escalated`` (``budget exhausted``)."""
    prices: dict[str, PriceSpec] = Field(default_factory=dict)
    """Prices by model (``provider:model``, or the model's name alone) over `genai-prices`'."""
    notify: list[NotifyTarget] = Field(default_factory=list)
    """Where the final outcome is sent when the task ends (done, escalated, awaiting review or
    failed): written to the store's outbox with the outcome, delivered by the worker. Only the
    submitter sets it; the model has no say."""
    secret: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = Field(
        default_factory=list
    )
    """Environment variable names no check and no ``run_command`` (nor exec's agent CLI) may
    see. Provider API keys and donegate's own secrets are always withheld.

    Every name any task read by this process marks secret is withheld from every child it starts
    (`donegate.harness.custody.withhold`): one mechanism on every path (run, exec, hooks, the
    worker, verify), and hiding one task's secret from another task's checks costs nothing."""

    @field_validator("secret")
    @classmethod
    def _withhold_secrets(cls, names: list[str]) -> list[str]:
        withhold(names)
        return names

    @field_validator("checklist")
    @classmethod
    def _items(cls, items: list[str]) -> list[str]:
        seen: set[str] = set()  # a set: a list scan is quadratic in a hostile 4 MiB file
        for i, item in enumerate(items):
            if not item.strip():
                raise ValueError(f"item {i} is empty")
            if item in seen:
                raise ValueError(f"duplicate item {item!r}")
            seen.add(item)
        return items

    @field_validator("checks")
    @classmethod
    def _names(cls, checks: list[CheckSpec]) -> list[CheckSpec]:
        seen: dict[str, int] = {}
        for i, check in enumerate(checks):
            if check.name in seen:
                raise ValueError(
                    f"checks[{seen[check.name]}] and checks[{i}] are both named {check.name!r}"
                )
            seen[check.name] = i
        return checks

    @field_validator("check_path")
    @classmethod
    def _absolute(cls, folders: list[str]) -> list[str]:
        return [str(Path.cwd() / f) for f in folders]  # an absolute folder stays as it is

    @model_validator(mode="after")
    def _bind_check_path(self) -> TaskSpec:
        if self.check_path:
            path = tuple(self.check_path)
            bound = [c.bound(path) if isinstance(c, PythonCheck) else c for c in self.checks]
            object.__setattr__(self, "checks", bound)  # frozen: set once, while being built
        return self

    @model_validator(mode="after")
    def _closed_by_something(self) -> TaskSpec:
        if self.closure == "checks" and not self.checks:
            raise ValueError(
                "checks: no acceptance check; add one, or say `closure: human` (a person "
                "approves) or `closure: model` (no mechanical check backs the result)"
            )
        return self

    @model_validator(mode="after")
    def _priced(self) -> TaskSpec:
        problem = _price_problem(self)
        if problem is not None:
            raise ValueError(problem)
        return self

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, tools: list[ToolRef]) -> list[ToolRef]:
        seen: set[str] = set()
        for i, tool in enumerate(tools):
            name = tool if isinstance(tool, str) else tool.tool_name
            if name in seen:
                raise ValueError(f"tools[{i}]: duplicate tool name {name!r}")
            seen.add(name)
        return tools


def _price_problem(spec: TaskSpec) -> str | None:
    """Why a ``usd`` budget cannot be kept (a named model with no known price), or None.

    ``script:FILE`` models are named by their player; the runner checks them before a call.
    """
    if spec.budget is None or spec.budget.usd is None:
        return None
    from donegate.spend import price_book  # genai-prices loads only for usd budgets

    book = price_book(spec.prices)
    for field in ("model", "verifier"):
        name = getattr(spec, field)
        if isinstance(name, str) and not name.startswith("script:") and not book.known(name):
            return f"budget.usd: no price is known for {field} {name!r}; give one under `prices:`"
    return None


def with_budget(spec: TaskSpec, *, usd: float | None = None, tokens: int | None = None) -> TaskSpec:
    """`spec` with its budget's ``usd`` and/or ``tokens`` set (``--budget-usd``,
    ``--budget-tokens``), checked as a task file's would be."""
    if usd is None and tokens is None:
        return spec
    data = spec.budget.model_dump() if spec.budget is not None else {}
    data.update({k: v for k, v in (("usd", usd), ("tokens", tokens)) if v is not None})
    try:
        budget = BudgetSpec.model_validate(data)
    except ValidationError as exc:
        field, msg = _located(exc.errors(include_url=False)[0])
        raise TaskSpecError(msg, source="--budget", field=f"budget.{field}") from None
    raised = spec.model_copy(update={"budget": budget})
    problem = _price_problem(raised)
    if problem is not None:
        raise TaskSpecError(problem, source=spec.id)
    return raised


def load_task(path: str | Path) -> TaskSpec:
    """Read a task from a YAML or JSON file.

    A relative ``workdir`` and ``check_path`` (and a relative ``script:FILE`` model or verifier)
    resolve against the task file's folder, which comes first in ``check_path``. Any problem
    raises `TaskSpecError` naming the file and the field; the file is untrusted input, so it is
    refused past 4 MiB, when it is not UTF-8, when it nests deeper than 64 levels, and when a
    mapping repeats a key.
    """
    source = str(path)
    file = Path(path)
    data = load_data(file, source=source, what="task file", error=_file_error)
    if not isinstance(data, dict):
        raise TaskSpecError(f"expected a mapping, got {type(data).__name__}", source=source)
    base = file.resolve().parent
    folders = data.get("check_path", [])
    if isinstance(folders, list) and all(isinstance(f, str) for f in folders):
        data["check_path"] = list(dict.fromkeys([str(base), *(str(base / f) for f in folders)]))
    spec = validate_task(data, source=source)
    update: dict[str, str] = {}
    if spec.workdir is not None:
        update["workdir"] = str(base / spec.workdir)
    for field in ("model", "verifier"):
        value = getattr(spec, field)
        if isinstance(value, str) and value.startswith("script:"):
            update[field] = f"script:{base / value.removeprefix('script:')}"
    return spec.model_copy(update=update) if update else spec


def _file_error(message: str, *, source: str | None, field: str | None = None) -> TaskSpecError:
    """A file-level problem: its line goes after the message (fields name spec keys here)."""
    return TaskSpecError(f"{message} ({field})" if field else message, source=source)


def validate_task(data: Any, *, source: str | None = None) -> TaskSpec:
    """`TaskSpec.model_validate`, raising `TaskSpecError` with a one-line, located message."""
    try:
        return TaskSpec.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        field, msg = _located(errors[0])
        if len(errors) > 1:
            msg += f" (and {len(errors) - 1} more)"
        raise TaskSpecError(msg, source=source, field=field) from None


def task_problems(data: Any, *, source: str | None = None) -> list[TaskSpecError]:
    """Every problem validating `data` as a task finds, each located; empty for a valid task.

    For ``donegate check``, which reports them all at once (`validate_task` raises the first).
    """
    try:
        TaskSpec.model_validate(data)
    except ValidationError as exc:
        located = (_located(e) for e in exc.errors(include_url=False))
        return [TaskSpecError(msg, source=source, field=field) for field, msg in located]
    return []


def _located(error: Any) -> tuple[str, str]:
    """A pydantic error as (field, message), the message starting in lower case."""
    msg = str(error["ctx"]["error"]) if error["type"] == "value_error" else error["msg"]
    return _format_loc(error["loc"]), msg[:1].lower() + msg[1:]


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part not in _TAGS:
            out += f".{part}" if out else part
    return out
