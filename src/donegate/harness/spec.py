"""Task specs: what the agent must do and how the harness will know it is done.

A task comes from a YAML or JSON file (`load_task`) or is built in Python (`TaskSpec(...)`,
`TaskSpec.model_validate(dict)`). Every model is frozen and rejects unknown keys, so a typo in a
task file is an error naming the file and the field rather than a check that silently never runs.

In a file, each check is a mapping with exactly one kind key, plus optional ``name`` and
``timeout``::

    checks:
      - run: pytest -q
        timeout: 300
      - file_contains: {path: src/app.py, text: "def main"}
      - sql: {url: "sqlite:///app.db", query: "select 1 from users"}
    protect: [tests/**]        # the agent may not change, add or delete these
    closure: checks            # the default: at least one check; or human, or model
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, get_args

import jsonschema
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from donegate._files import load_data
from donegate.errors import TaskSpecError
from donegate.harness.protect import check_pattern

__all__ = [
    "BUILTIN_TOOLS",
    "CHECK_KINDS",
    "TASK_ID",
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
    "PythonCheck",
    "RunCheck",
    "Sql",
    "SqlCheck",
    "TaskSpec",
    "TaskSpecError",
    "ToolRef",
    "Webhook",
    "WebhookTarget",
    "load_task",
    "task_id_problem",
    "task_problems",
    "validate_task",
]

BuiltinTool: TypeAlias = Literal[
    "read_file", "write_file", "list_dir", "run_command", "update_checklist"
]
BUILTIN_TOOLS: tuple[BuiltinTool, ...] = get_args(BuiltinTool)
"""Tools the harness provides by name; a task that lists no tools gets all of them."""

CHECK_KINDS = (
    "run",
    "file_exists",
    "file_contains",
    "file_matches",
    "json_schema",
    "sql",
    "http",
    "python",
)
"""The key that names each built-in check kind in a task file."""


def _shaped(pattern: str, expected: str) -> AfterValidator:
    def check(value: str) -> str:
        if not re.fullmatch(pattern, value):
            raise ValueError(f"expected {expected}, got {value!r}")
        return value

    return AfterValidator(check)


TASK_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""What a task id may be: it names files and keys, so it is short and needs no quoting."""


def task_id_problem(value: str) -> str | None:
    """Why `value` is not a task id (a one-line reason), or None when it is one."""
    if TASK_ID.fullmatch(value):
        return None
    if not value:
        return "a task id is empty"
    if len(value) > 128:
        return f"a task id has at most 128 characters, got {len(value):,}"
    bad = next(c for c in value if not TASK_ID.fullmatch(c))
    return f"a task id is letters, digits, '.', '_' and '-', got {bad!r} in {value!r}"


def _task_id(value: str) -> str:
    problem = task_id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


TaskId = Annotated[str, Field(min_length=1), AfterValidator(_task_id)]
ImportPath = Annotated[str, _shaped(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", "'package.module:function'")]
ModelName = Annotated[str, _shaped(r"[\w.-]+:.+", "'provider:model' or 'script:FILE'")]
HttpUrl = Annotated[str, _shaped(r"https?://.+", "an http:// or https:// url")]


class _Strict(BaseModel):
    # nan and inf are no timeout, count or status anyone means: refuse them in every field
    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False
    )


class _Check(_Strict):
    """Fields every check shares."""

    kind: ClassVar[str]
    name: str = ""
    """A stable name for reports and certificates; derived from the check when empty."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds before the check fails as timed out; the runner's default when unset."""

    def _derived_name(self) -> str:
        raise NotImplementedError

    @model_validator(mode="after")
    def _fill_name(self) -> _Check:
        if not self.name:
            # Frozen model: bypass the guard once, while the instance is being built.
            object.__setattr__(self, "name", self._derived_name())
        return self


class RunCheck(_Check):
    """Run a command (no shell) in the workdir; passes on exit code 0."""

    kind: ClassVar[str] = "run"
    run: str | list[str]
    """A command line (split like a POSIX shell, but never run by one) or an argv list."""

    @field_validator("run")
    @classmethod
    def _parses(cls, value: str | list[str]) -> str | list[str]:
        argv = shlex.split(value) if isinstance(value, str) else value
        if not argv:
            raise ValueError("the command is empty")
        return value

    @property
    def argv(self) -> list[str]:
        """The command as an argument vector."""
        return shlex.split(self.run) if isinstance(self.run, str) else list(self.run)

    def _derived_name(self) -> str:
        return f"run: {self.run if isinstance(self.run, str) else shlex.join(self.run)}"


class FileExistsCheck(_Check):
    """Passes when the path (file or directory) exists inside the workdir."""

    kind: ClassVar[str] = "file_exists"
    file_exists: str = Field(min_length=1)
    """The path, relative to the workdir (a path outside it fails the check)."""

    def _derived_name(self) -> str:
        return f"file_exists: {self.file_exists}"


class FileContains(_Strict):
    """Arguments of a `FileContainsCheck`."""

    path: str = Field(min_length=1)
    """The file, relative to the workdir."""
    text: str = Field(min_length=1)
    """Literal text the file must contain."""


class FileContainsCheck(_Check):
    """Passes when the file contains the text."""

    kind: ClassVar[str] = "file_contains"
    file_contains: FileContains
    """The file and the text."""

    def _derived_name(self) -> str:
        return f"file_contains: {self.file_contains.path} has {self.file_contains.text!r}"


class FileMatches(_Strict):
    """Arguments of a `FileMatchesCheck`."""

    path: str = Field(min_length=1)
    """The file, relative to the workdir."""
    regex: str = Field(min_length=1)
    """A Python regular expression, searched in multiline mode."""

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
        return value


class FileMatchesCheck(_Check):
    """Passes when the regex matches somewhere in the file."""

    kind: ClassVar[str] = "file_matches"
    file_matches: FileMatches
    """The file and the regular expression."""

    def _derived_name(self) -> str:
        return f"file_matches: {self.file_matches.path} ~ {self.file_matches.regex!r}"


class JsonSchema(_Strict):
    """Arguments of a `JsonSchemaCheck`."""

    path: str = Field(min_length=1)
    """The JSON file, relative to the workdir."""
    schema_: dict[str, Any] = Field(alias="schema")
    """An inline JSON Schema (draft 2020-12)."""

    @field_validator("schema_")
    @classmethod
    def _supported(cls, value: dict[str, Any]) -> dict[str, Any]:
        _check_schema(value, "")
        return value


class JsonSchemaCheck(_Check):
    """Passes when the file is JSON that matches the schema."""

    kind: ClassVar[str] = "json_schema"
    json_schema: JsonSchema
    """The file and the schema."""

    def _derived_name(self) -> str:
        return f"json_schema: {self.json_schema.path}"


class Sql(_Strict):
    """Arguments of a `SqlCheck`."""

    url: str = Field(min_length=1)
    """A SQLAlchemy URL; a relative sqlite path resolves against the workdir."""
    query: str = Field(min_length=1)
    """A query that must return at least one row."""


class SqlCheck(_Check):
    """Passes when the query returns at least one row."""

    kind: ClassVar[str] = "sql"
    sql: Sql
    """The database and the query."""

    def _derived_name(self) -> str:
        return f"sql: {self.sql.query}"


class Http(_Strict):
    """Arguments of an `HttpCheck`."""

    url: HttpUrl
    """The url to GET (``http://`` or ``https://``)."""
    status: int = Field(default=200, ge=100, le=599)
    """The expected status of a GET (redirects are followed)."""


class HttpCheck(_Check):
    """Passes when a GET of the url answers with the expected status."""

    kind: ClassVar[str] = "http"
    http: Http
    """The url and the expected status."""

    def _derived_name(self) -> str:
        return f"http: {self.http.url}"


class PythonCheck(_Check):
    """Calls ``module:function(workdir)``, which returns a bool or ``(bool, detail)``.

    It runs in a child interpreter that imports from the task's ``check_path`` (bound here by
    `TaskSpec`), never from the workdir; see `donegate.harness.checks`.
    """

    kind: ClassVar[str] = "python"
    python: ImportPath
    """``package.module:function``, imported from the task's ``check_path``."""
    _search_path: tuple[str, ...] | None = PrivateAttr(default=None)
    # Where the module is imported from, set from TaskSpec.check_path; not part of the spec.

    def _derived_name(self) -> str:
        return f"python: {self.python}"

    @property
    def search_path(self) -> tuple[str, ...] | None:
        """The folders the module is imported from; None when no task bound any."""
        return self._search_path

    def __eq__(self, other: object) -> bool:
        # The same check wherever it imports from: a certificate's copy equals the task's.
        if not isinstance(other, PythonCheck):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((self.python, self.name, self.timeout))


def _check_tag(value: Any) -> str | None:
    if isinstance(value, _Check):
        return f"check:{value.kind}"
    found = [k for k in CHECK_KINDS if k in value] if isinstance(value, dict) else []
    return f"check:{found[0]}" if len(found) == 1 else None


CheckSpec: TypeAlias = Annotated[
    Annotated[RunCheck, Tag("check:run")]
    | Annotated[FileExistsCheck, Tag("check:file_exists")]
    | Annotated[FileContainsCheck, Tag("check:file_contains")]
    | Annotated[FileMatchesCheck, Tag("check:file_matches")]
    | Annotated[JsonSchemaCheck, Tag("check:json_schema")]
    | Annotated[SqlCheck, Tag("check:sql")]
    | Annotated[HttpCheck, Tag("check:http")]
    | Annotated[PythonCheck, Tag("check:python")],
    Discriminator(
        _check_tag,
        custom_error_type="check_kind",
        custom_error_message=f"a check is a mapping with exactly one of: {', '.join(CHECK_KINDS)}",
    ),
]
"""One acceptance check; the harness runs it against the world, never against model text."""


class ImportTool(_Strict):
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


class Webhook(_Strict):
    """Where a webhook notification is POSTed, and extra headers (an auth token, say)."""

    url: HttpUrl
    """The receiver's http(s) URL."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers (an auth token, say); never shown to the model."""


class WebhookTarget(_Strict):
    """``{webhook: {url, headers}}``: POST the outcome as JSON with an ``Idempotency-Key``."""

    webhook: Webhook
    """Where to POST and with which headers."""


class CommandTarget(_Strict):
    """``{command: [argv...]}``: run a program with the outcome on stdin and
    ``DONEGATE_IDEMPOTENCY_KEY`` set; ``{task_id}``, ``{status}``, ``{idempotency_key}``,
    ``{certificate}`` and ``{report}`` (JSON text) in an argument are replaced (never through a
    shell)."""

    command: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    """The program and its arguments (an argv list, never a shell line)."""


def _notify_tag(value: Any) -> str | None:
    if isinstance(value, WebhookTarget | CommandTarget):
        return "notify:webhook" if isinstance(value, WebhookTarget) else "notify:command"
    found = [k for k in ("webhook", "command") if k in value] if isinstance(value, dict) else []
    return f"notify:{found[0]}" if len(found) == 1 else None


NotifyTarget: TypeAlias = Annotated[
    Annotated[WebhookTarget, Tag("notify:webhook")]
    | Annotated[CommandTarget, Tag("notify:command")],
    Discriminator(
        _notify_tag,
        custom_error_type="notify_kind",
        custom_error_message="a notify target is a mapping with exactly one of: webhook, command",
    ),
]
"""One place a task's final outcome is sent (through the worker's outbox)."""


class TaskSpec(_Strict):
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
    notify: list[NotifyTarget] = Field(default_factory=list)
    """Where the final outcome is sent when the task ends (done, escalated, awaiting review or
    failed): written to the store's outbox with the outcome, delivered by the worker. Only the
    submitter sets it; the model has no say."""

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
            bound = [_bind(c, tuple(self.check_path)) for c in self.checks]
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


def _bind(check: CheckSpec, path: tuple[str, ...]) -> CheckSpec:
    """A copy of a python check that imports from `path` (a copy: specs may share checks)."""
    if not isinstance(check, PythonCheck):
        return check
    copy = check.model_copy()
    copy._search_path = path
    return copy


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


def _check_schema(schema: Any, where: str) -> None:
    """Reject a schema that is not valid JSON Schema (draft 2020-12), naming the problem."""
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = ".".join(str(p) for p in exc.absolute_path)
        raise ValueError(
            f"not a valid JSON Schema at {path or where or '$'}: {exc.message}"
        ) from None
