"""The finish tool: a structured final answer the model submits by calling a tool.

The model finishing with ``submit_answer`` says it means to be done and gives an answer with a
schema; invalid arguments are fed back. A prose answer without the call also ends the run.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from donegate.codec import canonical_json
from donegate.errors import UserError
from donegate.models.base import ToolSpec

if TYPE_CHECKING:  # both are imported where a finish tool is used: `import donegate` stays light
    import jsonschema
    import pydantic

__all__ = ["FinishTool", "as_finish_tool", "schema_problem", "validator"]

DESCRIPTION = "Submit the final answer. Call this once, when the task is finished."


@dataclass(frozen=True, kw_only=True, slots=True)
class FinishTool:
    """A tool whose valid call ends the run with its arguments as the output."""

    schema: Mapping[str, Any]
    """JSON Schema of the answer."""
    name: str = "submit_answer"
    """The tool name the model calls."""
    description: str = DESCRIPTION
    """What the model is told about it."""
    model: type[pydantic.BaseModel] | None = None
    """When given, validates and builds the output (a model instance)."""

    @property
    def spec(self) -> ToolSpec:
        """The tool as the model sees it."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.schema)

    def validate(self, arguments: Mapping[str, Any]) -> tuple[Any, str | None]:
        """``(output, None)`` for valid arguments, ``(None, why)`` otherwise."""
        if self.model is not None:
            import pydantic  # loaded already: `self.model` is a pydantic model

            try:
                return self.model.model_validate(dict(arguments)), None
            except pydantic.ValidationError as exc:
                return None, "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or '(answer)'}: {e['msg']}"
                    for e in exc.errors()
                )
        errors = sorted(
            validator(self.schema).iter_errors(dict(arguments)),
            key=lambda e: list(e.path),
        )
        if errors:
            return None, "; ".join(
                f"{'.'.join(str(p) for p in e.path) or '(answer)'}: {e.message}" for e in errors
            )
        return dict(arguments), None


def _key(schema: Mapping[str, Any]) -> str:
    return canonical_json(schema)


@functools.lru_cache(maxsize=512)
def _validator(key: str) -> jsonschema.Draft202012Validator:
    import jsonschema  # here, not at the top: only a run with a finish tool needs it

    return jsonschema.Draft202012Validator(json.loads(key))


@functools.lru_cache(maxsize=512)
def _problem(key: str) -> str | None:
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(key))
    except jsonschema.SchemaError as exc:
        return str(exc.message)
    return None


def validator(schema: Mapping[str, Any]) -> jsonschema.Draft202012Validator:
    """A validator for `schema`, built once per distinct schema (building one is costly)."""
    return _validator(_key(schema))


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why `schema` is not valid JSON Schema (draft 2020-12), or None; cached per schema."""
    return _problem(_key(schema))


def _is_model_class(value: Any) -> TypeGuard[type[pydantic.BaseModel]]:
    loaded = sys.modules.get("pydantic")  # not imported: `value` cannot be a pydantic model
    return loaded is not None and isinstance(value, type) and issubclass(value, loaded.BaseModel)


def as_finish_tool(value: Any, *, name: str = "submit_answer") -> FinishTool | None:
    """A `FinishTool` from a pydantic model class, a JSON Schema mapping, or itself."""
    if value is None or isinstance(value, FinishTool):
        return value
    if _is_model_class(value):
        schema = value.model_json_schema()
        schema.pop("title", None)
        description = (value.__doc__ or "").strip() or DESCRIPTION
        return FinishTool(schema=schema, name=name, model=value, description=description)
    if isinstance(value, Mapping):
        problem = schema_problem(value)
        if problem is not None:
            raise UserError(f"finish_tool: not a valid JSON Schema: {problem}")
        return FinishTool(schema=value, name=name)
    raise UserError(f"finish_tool: expected a pydantic model or a JSON Schema, got {value!r}")
