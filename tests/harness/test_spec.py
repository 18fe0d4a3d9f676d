"""Task specs: files and dicts in, frozen models out, located one-line errors otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from donegate.errors import UserError
from donegate.harness.spec import (
    BUILTIN_TOOLS,
    CHECK_KINDS,
    FileContains,
    FileContainsCheck,
    ImportTool,
    JsonSchema,
    JsonSchemaCheck,
    RunCheck,
    TaskSpec,
    TaskSpecError,
    load_task,
    validate_task,
)

FULL_YAML = """\
id: migrate-endpoints
prompt: Migrate the six endpoints to the v2 client.
system: You are careful.
checklist: [users, orders, invoices, refunds, search, health]
completion_condition: All six endpoints use the v2 client and the tests pass.
checks:
  - run: pytest -q
    timeout: 300
  - run: [python, -c, "print('ok')"]
    name: smoke
  - file_exists: src/app.py
  - file_contains: {path: src/app.py, text: "import v2"}
  - file_matches: {path: src/app.py, regex: "^def main"}
  - json_schema:
      path: out.json
      schema: {type: object, required: [ok], properties: {ok: {const: true}}}
  - sql: {url: "sqlite:///app.db", query: "select 1 from users"}
  - http: {url: "http://127.0.0.1:8000/health", status: 204}
  - python: checks.endpoints:all_migrated
  - tests: {runner: pytest, args: [tests], expect: {passed_at_least: 6, ids: ["t.py::test_a"]}}
allow: [".venv/**"]
verifier: anthropic:claude-haiku-4-5
max_continuations: 2
max_steps: 80
tools:
  - read_file
  - run_command
  - {import: "myapp.tools:deploy", side_effect: true, name: ship}
workdir: repo
type: migration
model: script:agent.yaml
"""


def _write(tmp_path: Path, text: str, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(TaskSpecError) as info:
        validate_task({"id": "t", "prompt": "p", **data}, source="task.yaml")
    return str(info.value)


def test_a_full_yaml_task_loads_every_field(tmp_path: Path) -> None:
    spec = load_task(_write(tmp_path, FULL_YAML))
    assert spec.id == "migrate-endpoints"
    assert spec.system == "You are careful."
    assert spec.checklist[-1] == "health"
    assert [c.kind for c in spec.checks] == list(CHECK_KINDS[:1]) + list(CHECK_KINDS)
    assert [c.name for c in spec.checks] == [
        "run: pytest -q",
        "smoke",
        "file_exists: src/app.py",
        "file_contains: src/app.py has 'import v2'",
        "file_matches: src/app.py ~ '^def main'",
        "json_schema: out.json",
        "sql: select 1 from users",
        "http: http://127.0.0.1:8000/health",
        "python: checks.endpoints:all_migrated",
        "tests: pytest tests",
    ]
    assert spec.allow == [".venv/**"]
    assert spec.checks[0].timeout == 300
    assert isinstance(spec.checks[5], JsonSchemaCheck)
    assert spec.checks[5].json_schema.schema_["required"] == ["ok"]
    assert spec.verifier == "anthropic:claude-haiku-4-5"
    assert (spec.max_continuations, spec.max_steps, spec.type) == (2, 80, "migration")
    assert spec.tools[:2] == ["read_file", "run_command"]
    tool = spec.tools[2]
    assert isinstance(tool, ImportTool)
    assert (tool.import_path, tool.side_effect, tool.tool_name) == (
        "myapp.tools:deploy",
        True,
        "ship",
    )


def test_relative_paths_resolve_against_the_task_folder(tmp_path: Path) -> None:
    spec = load_task(_write(tmp_path, FULL_YAML))
    assert spec.workdir == str(tmp_path.resolve() / "repo")
    assert spec.model == f"script:{tmp_path.resolve() / 'agent.yaml'}"
    assert spec.verifier == "anthropic:claude-haiku-4-5"  # a provider model is left alone


def test_an_absolute_workdir_is_kept(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    spec = load_task(_write(tmp_path, f"id: t\nprompt: p\nclosure: model\nworkdir: {other}\n"))
    assert spec.workdir == str(other)


def test_defaults(tmp_path: Path) -> None:
    spec = load_task(_write(tmp_path, "id: t\nprompt: p\nchecks: [{file_exists: a}]\n"))
    assert (spec.closure, spec.protect) == ("checks", [])
    spec = load_task(_write(tmp_path, "id: t\nprompt: p\nclosure: model\n"))
    assert spec.max_continuations == 3
    assert spec.max_steps == 50
    assert spec.tools == list(BUILTIN_TOOLS)
    assert set(BUILTIN_TOOLS) == {
        "read_file",
        "write_file",
        "list_dir",
        "run_command",
        "update_checklist",
    }
    assert (spec.checks, spec.checklist, spec.completion_condition) == ([], [], "")
    assert (spec.workdir, spec.verifier, spec.model, spec.system) == (None, None, None, None)


def test_json_task_files_load(tmp_path: Path) -> None:
    data = {"id": "j", "prompt": "p", "checks": [{"file_exists": "a.txt"}]}
    spec = load_task(_write(tmp_path, json.dumps(data), "task.json"))
    assert spec.checks[0].name == "file_exists: a.txt"


def test_a_spec_round_trips_through_its_dump(tmp_path: Path) -> None:
    spec = load_task(_write(tmp_path, FULL_YAML))
    assert TaskSpec.model_validate(spec.model_dump(by_alias=True)) == spec
    assert TaskSpec.model_validate(spec.model_dump()) == spec
    assert TaskSpec.model_validate_json(spec.model_dump_json(by_alias=True)) == spec


def test_python_construction() -> None:
    spec = TaskSpec(
        id="t",
        prompt="p",
        checks=[
            RunCheck(run=["pytest", "-q"]),
            FileContainsCheck(file_contains=FileContains(path="a.py", text="x")),
            JsonSchemaCheck(json_schema=JsonSchema(path="o.json", schema={"type": "object"})),
        ],
        tools=["read_file", ImportTool(import_path="m.tools:ping", side_effect=False)],
    )
    assert [c.name for c in spec.checks] == [
        "run: pytest -q",
        "file_contains: a.py has 'x'",
        "json_schema: o.json",
    ]
    assert isinstance(spec.checks[0], RunCheck)
    assert spec.checks[0].argv == ["pytest", "-q"]
    assert RunCheck(run="python -c 'print(1)'").argv == ["python", "-c", "print(1)"]
    tool = spec.tools[1]
    assert isinstance(tool, ImportTool)
    assert tool.tool_name == "ping"


def test_specs_are_frozen() -> None:
    spec = TaskSpec(id="t", prompt="p", closure="human")
    with pytest.raises(ValidationError):
        spec.max_steps = 3
    with pytest.raises(ValidationError):
        RunCheck(run="x").name = "y"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"checks": [{"run": "x"}, {"file_contains": {"text": "t"}}]},
            "task.yaml: checks[1].file_contains.path: field required",
        ),
        ({"max_continuation": 2}, "task.yaml: max_continuation: extra inputs are not permitted"),
        ({"checks": [{"run": "x", "timout": 3}]}, "task.yaml: checks[0].timout: extra inputs"),
        ({"checks": [{"file_exist": "a"}]}, "task.yaml: checks[0]: a check is a mapping with"),
        ({"checks": [{"run": "a", "file_exists": "b"}]}, "task.yaml: checks[0]: a check is"),
        ({"checks": ["pytest"]}, "task.yaml: checks[0]: a check is a mapping"),
        ({"checks": [{"run": ""}]}, "task.yaml: checks[0].run: the command is empty"),
        ({"checks": [{"run": "echo 'x"}]}, "task.yaml: checks[0].run: no closing quotation"),
        ({"checks": [{"run": "x", "timeout": 0}]}, "task.yaml: checks[0].timeout: input should"),
        (
            {"checks": [{"file_matches": {"path": "a", "regex": "("}}]},
            "task.yaml: checks[0].file_matches.regex: invalid regular expression",
        ),
        (
            {"checks": [{"json_schema": {"path": "a", "schema": {"type": "nope"}}}]},
            "task.yaml: checks[0].json_schema.schema: not a valid JSON Schema at type",
        ),
        (
            {"checks": [{"json_schema": {"path": "a", "schema": {"minLength": -1}}}]},
            "not a valid JSON Schema at minLength",
        ),
        (
            {"checks": [{"http": {"url": "file:///etc/passwd"}}]},
            "task.yaml: checks[0].http.url: expected an http:// or https:// url",
        ),
        ({"checks": [{"http": {"url": "http://x", "status": 99}}]}, "checks[0].http.status"),
        ({"checks": [{"sql": {"url": "sqlite://"}}]}, "task.yaml: checks[0].sql.query: field"),
        ({"checks": [{"python": "mod.func"}]}, "checks[0].python: expected 'package.module:"),
        ({"checks": [{"run": "a"}, {"run": "a"}]}, "checks: checks[0] and checks[1] are both"),
        ({"checklist": ["a", "a"]}, "task.yaml: checklist: duplicate item 'a'"),
        ({"checklist": ["a", " "]}, "task.yaml: checklist: item 1 is empty"),
        ({"tools": ["read_fil"]}, "task.yaml: tools[0]: input should be 'read_file'"),
        ({"tools": [{"import": "m:f"}]}, "task.yaml: tools[0].side_effect: field required"),
        ({"tools": [{"import": "m", "side_effect": True}]}, "tools[0].import: expected"),
        (
            {"tools": ["read_file", {"import": "m:f", "side_effect": False, "name": "read_file"}]},
            "tools: tools[1]: duplicate tool name 'read_file'",
        ),
        ({"verifier": "haiku"}, "task.yaml: verifier: expected 'provider:model' or 'script:FILE'"),
        ({"max_continuations": -1}, "task.yaml: max_continuations: input should be greater"),
        ({"max_steps": 0}, "task.yaml: max_steps: input should be greater"),
        ({"check_path": "lib"}, "task.yaml: check_path: input should be a valid list"),
        ({"max_command_timeout": 0}, "task.yaml: max_command_timeout: input should be greater"),
        ({"max_read_bytes": 10}, "task.yaml: max_read_bytes: input should be greater"),
        ({"id": ""}, "task.yaml: id: string should have at least 1 character"),
    ],
)
def test_invalid_specs_name_the_file_and_the_field(data: dict[str, Any], expected: str) -> None:
    message = _error(data)
    assert expected in message
    assert "\n" not in message


def test_several_errors_are_counted_on_one_line() -> None:
    message = _error({"max_steps": 0, "max_continuations": -1})
    assert message.endswith("(and 1 more)")


def test_a_missing_field_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "id: t\nchecks:\n  - file_exists: a\n")
    with pytest.raises(TaskSpecError) as info:
        load_task(path)
    assert str(info.value) == f"{path}: prompt: field required"
    assert info.value.source == str(path)
    assert info.value.field == "prompt"
    assert isinstance(info.value, UserError)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("task.yaml", "id: [unclosed\n", "not valid YAML"),
        ("task.json", '{"id": ', "not valid JSON"),
        ("task.yaml", "- id: t\n", "expected a mapping, got list"),
        ("task.yaml", "", "expected a mapping, got NoneType"),
    ],
)
def test_unreadable_task_files(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = _write(tmp_path, text, name)
    with pytest.raises(TaskSpecError) as info:
        load_task(path)
    assert str(info.value).startswith(f"{path}: {expected}")
    assert "\n" not in str(info.value)


def test_a_missing_task_file(tmp_path: Path) -> None:
    with pytest.raises(TaskSpecError, match=r"nope\.yaml: cannot read the task file"):
        load_task(tmp_path / "nope.yaml")
