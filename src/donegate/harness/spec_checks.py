"""The acceptance checks a task file may hold, one pydantic model per kind.

In a file, each check is a mapping with exactly one kind key, plus optional ``name`` and
``timeout`` (``- run: pytest -q``, ``- file_contains: {path: src/app.py, text: "def main"}``).
`CheckSpec` is their union, told apart by that key. A check class says its kind and how its
default name reads at its class line (``class SqlCheck(Check, kind="sql", label="{sql.query}")``),
so a new kind is its arguments and one line, not another copy of the naming code. The models are
re-exported from `donegate.harness.spec`, the module a task is read by.
"""

from __future__ import annotations

import re
import shlex
from typing import Annotated, Any, ClassVar, Literal, TypeAlias

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)

__all__ = [
    "CHECK_KINDS",
    "Check",
    "CheckSpec",
    "FileContains",
    "FileContainsCheck",
    "FileExistsCheck",
    "FileMatches",
    "FileMatchesCheck",
    "Http",
    "HttpCheck",
    "JsonSchema",
    "JsonSchemaCheck",
    "PythonCheck",
    "RunCheck",
    "SpecModel",
    "Sql",
    "SqlCheck",
    "Tests",
    "TestsCheck",
    "TestsExpect",
    "keyed_union",
    "shaped",
]

CHECK_KINDS = (
    "run",
    "file_exists",
    "file_contains",
    "file_matches",
    "json_schema",
    "sql",
    "http",
    "python",
    "tests",
)
"""The key that names each built-in check kind in a task file."""


class SpecModel(BaseModel):
    """The base of every model a task file is made of: frozen, and unknown keys are refused."""

    # nan and inf are no timeout, count or status anyone means: refuse them in every field
    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False
    )


def shaped(pattern: str, expected: str) -> AfterValidator:
    """A validator refusing a string that does not match `pattern` in full."""

    def check(value: str) -> str:
        if not re.fullmatch(pattern, value):
            raise ValueError(f"expected {expected}, got {value!r}")
        return value

    return AfterValidator(check)


def keyed_union(prefix: str, keys: tuple[str, ...], what: str) -> Discriminator:
    """Chooses a union's member (tagged ``prefix:key``) by the one of `keys` a mapping holds."""

    def tag(value: Any) -> str | None:
        fields = type(value).model_fields if isinstance(value, BaseModel) else value
        found = [k for k in keys if k in fields] if isinstance(fields, dict) else []
        return f"{prefix}:{found[0]}" if len(found) == 1 else None

    return Discriminator(
        tag,
        custom_error_type=f"{prefix}_kind",
        custom_error_message=f"a {what} is a mapping with exactly one of: {', '.join(keys)}",
    )


ImportPath = Annotated[str, shaped(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", "'package.module:function'")]
HttpUrl = Annotated[str, shaped(r"https?://.+", "an http:// or https:// url")]
Text = Annotated[str, Field(min_length=1)]


class Check(SpecModel):
    """Fields every check shares; a subclass names its `kind` and `label` at its class line."""

    kind: ClassVar[str]
    """The key that names the check in a task file (``run``, ``sql``, ...)."""
    label: ClassVar[str]
    """How the default name reads after ``kind: ``: a `str.format` template over the fields."""
    name: str = ""
    """A stable name for reports and certificates; derived from the check when empty."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds before the check fails as timed out; the runner's default when unset."""
    network: bool = False
    """Whether the check's program may reach the network (its sandbox has none by default;
    an ``http:`` check is made by the gate itself and ignores this)."""

    def __init_subclass__(cls, *, kind: str = "", label: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if kind:
            cls.kind, cls.label = kind, label

    def _derived_name(self) -> str:
        return f"{self.kind}: {self.label.format_map(vars(self))}"

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        # `network` is written only when set: specs and certificates read as before without it
        data = handler(self)
        if isinstance(data, dict) and data.get("network") is False:
            del data["network"]
        return data

    @model_validator(mode="after")
    def _fill_name(self) -> Check:
        if not self.name:
            # Frozen model: bypass the guard once, while the instance is being built.
            object.__setattr__(self, "name", self._derived_name())
        return self


class RunCheck(Check, kind="run"):
    """Run a command (no shell) in the workdir; passes on exit code 0."""

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


class FileExistsCheck(Check, kind="file_exists", label="{file_exists}"):
    """Passes when the path (file or directory) exists inside the workdir."""

    file_exists: Text
    """The path, relative to the workdir (a path outside it fails the check)."""


class _InFile(SpecModel):
    path: Text
    """The file, relative to the workdir."""


class FileContains(_InFile):
    """Arguments of a `FileContainsCheck`: the file and the literal text it must contain."""

    text: Text
    """Literal text the file must contain."""


class FileContainsCheck(
    Check, kind="file_contains", label="{file_contains.path} has {file_contains.text!r}"
):
    """Passes when the file contains the text."""

    file_contains: FileContains
    """The file and the text."""


class FileMatches(_InFile):
    """Arguments of a `FileMatchesCheck`: the file and a regular expression."""

    regex: Text
    """A Python regular expression, searched in multiline mode."""

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
        return value


class FileMatchesCheck(
    Check, kind="file_matches", label="{file_matches.path} ~ {file_matches.regex!r}"
):
    """Passes when the regex matches somewhere in the file."""

    file_matches: FileMatches
    """The file and the regular expression."""


class JsonSchema(_InFile):
    """Arguments of a `JsonSchemaCheck`: a JSON file and the schema it must match."""

    schema_: dict[str, Any] = Field(alias="schema")
    """An inline JSON Schema (draft 2020-12)."""

    @field_validator("schema_")
    @classmethod
    def _supported(cls, value: dict[str, Any]) -> dict[str, Any]:
        _check_schema(value)
        return value


class JsonSchemaCheck(Check, kind="json_schema", label="{json_schema.path}"):
    """Passes when the file is JSON that matches the schema."""

    json_schema: JsonSchema
    """The file and the schema."""


class Sql(SpecModel):
    """Arguments of a `SqlCheck`: a database and a query."""

    url: Text
    """A SQLAlchemy URL; a relative sqlite path resolves against the workdir."""
    query: Text
    """A query that must return at least one row."""


class SqlCheck(Check, kind="sql", label="{sql.query}"):
    """Passes when the query returns at least one row."""

    sql: Sql
    """The database and the query."""


class Http(SpecModel):
    """Arguments of an `HttpCheck`: a url and the status a GET of it must answer."""

    url: HttpUrl
    """The url to GET (``http://`` or ``https://``)."""
    status: int = Field(default=200, ge=100, le=599)
    """The expected status of a GET (redirects are followed)."""


class HttpCheck(Check, kind="http", label="{http.url}"):
    """Passes when a GET of the url answers with the expected status."""

    http: Http
    """The url and the expected status."""


class PythonCheck(Check, kind="python", label="{python}"):
    """Calls ``module:function(workdir)``, which returns a bool or ``(bool, detail)``.

    It runs in a child interpreter that imports from the task's ``check_path`` (bound here by
    `TaskSpec`), never from the workdir; see `donegate.harness.checks`.
    """

    python: ImportPath
    """``package.module:function``, imported from the task's ``check_path``."""
    _search_path: tuple[str, ...] | None = PrivateAttr(default=None)
    # Where the module is imported from, set from TaskSpec.check_path; not part of the spec.

    @property
    def search_path(self) -> tuple[str, ...] | None:
        """The folders the module is imported from; None when no task bound any."""
        return self._search_path

    def bound(self, path: tuple[str, ...]) -> PythonCheck:
        """A copy that imports from `path` (a copy: specs may share checks)."""
        copy = self.model_copy()
        copy._search_path = path
        return copy

    def __eq__(self, other: object) -> bool:
        # The same check wherever it imports from: a certificate's copy equals the task's.
        if not isinstance(other, PythonCheck):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((self.python, self.name, self.timeout))


class TestsExpect(SpecModel):
    """What a `TestsCheck`'s run must show, read from the runner's own report."""

    passed_at_least: int = Field(default=1, ge=0)
    """Tests that must pass, at least (a run that ran none is no pass)."""
    ids: list[Text] = Field(default_factory=list)
    """Tests that must each have passed, by the runner's id (``tests/test_x.py::test_a`` for
    pytest, ``test_x.T.test_a`` for unittest)."""


class Tests(SpecModel):
    """Arguments of a `TestsCheck`: the runner, its arguments, what its report must show."""

    runner: Literal["pytest", "unittest"]
    """``pytest`` or ``unittest`` (run as ``python -m RUNNER ARGS`` would be)."""
    args: list[str] = Field(default_factory=list)
    """Arguments for the runner (``[tests, -q]``, ``[discover, -s, tests]``)."""
    expect: TestsExpect = Field(default_factory=TestsExpect)
    """What the report must show."""


class TestsCheck(Check, kind="tests"):
    """Run pytest or unittest and judge the runner's own per-test report, not its exit code:
    an exit 0 with no report, a missing id or too few passed fails
    (`donegate.harness.testsuite`)."""

    __test__ = False  # not a test class, whatever pytest's name rule says

    tests: Tests
    """The runner, its arguments and the expectations."""

    def _derived_name(self) -> str:
        return f"tests: {shlex.join([self.tests.runner, *self.tests.args])}"


CheckSpec: TypeAlias = Annotated[
    Annotated[RunCheck, Tag("check:run")]
    | Annotated[FileExistsCheck, Tag("check:file_exists")]
    | Annotated[FileContainsCheck, Tag("check:file_contains")]
    | Annotated[FileMatchesCheck, Tag("check:file_matches")]
    | Annotated[JsonSchemaCheck, Tag("check:json_schema")]
    | Annotated[SqlCheck, Tag("check:sql")]
    | Annotated[HttpCheck, Tag("check:http")]
    | Annotated[PythonCheck, Tag("check:python")]
    | Annotated[TestsCheck, Tag("check:tests")],
    keyed_union("check", CHECK_KINDS, "check"),
]
"""One acceptance check; the harness runs it against the world, never against model text."""


def _check_schema(schema: Any) -> None:
    """Reject a schema that is not valid JSON Schema (draft 2020-12), naming the problem."""
    import jsonschema  # here: only a task with a JSON check needs it (a hook loads every task)

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = ".".join(str(p) for p in exc.absolute_path)
        raise ValueError(f"not a valid JSON Schema at {path or '$'}: {exc.message}") from None
