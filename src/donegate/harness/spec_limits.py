"""The task fields that bound the agent: what its programs may see (``sandbox:``) and what its
model calls may spend (``budget:``, ``prices:``). `donegate.harness.spec.TaskSpec` holds them."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from donegate.harness.spec_checks import SpecModel

__all__ = ["BudgetSpec", "PriceSpec", "SandboxSpec"]


def _readable_path(value: str) -> str:
    if "\0" in value:
        raise ValueError("a path holds a NUL byte")
    if not (value.startswith("/") or value == "~" or value.startswith("~/")):
        raise ValueError(f"{value!r} is not an absolute path (start it with / or ~/)")
    return value


class SandboxSpec(SpecModel):
    """``sandbox: {read: [...], network: false}``: what the agent's programs may see.

    In the sandbox the home folder is empty: a folder the agent's commands need (a tool's
    config, a cache of packages) is shown read-only when listed in `read`. donegate's own
    folder, its key and the task-side files stay hidden whatever is listed.
    """

    read: list[Annotated[str, Field(min_length=1), AfterValidator(_readable_path)]] = Field(
        default_factory=list
    )
    """Absolute (or ``~/``) paths shown read-only to the agent's programs."""
    network: bool = True
    """False: ``run_command`` runs with no network (an agent CLI under exec keeps its own)."""


class BudgetSpec(SpecModel):
    """``budget: {tokens: N, usd: X}``: what every model call of the task may spend in all, the
    agent's and the verifier's, over continuations, resumes and requeues."""

    tokens: int | None = Field(default=None, ge=1)
    """Input plus output tokens (cache reads and writes are input)."""
    usd: float | None = Field(default=None, gt=0)
    """US dollars, at `genai-prices`' prices or the task's ``prices:``."""

    @model_validator(mode="after")
    def _some_limit(self) -> BudgetSpec:
        if self.tokens is None and self.usd is None:
            raise ValueError("a budget needs `tokens`, `usd` or both")
        return self


class PriceSpec(SpecModel):
    """One model's price in US dollars per million tokens (``prices:`` in a task)."""

    input: float = Field(ge=0)
    """Uncached input tokens."""
    output: float = Field(ge=0)
    """Output tokens."""
    cache_read: float | None = Field(default=None, ge=0)
    """Input tokens read from the prompt cache; the input price when unset."""
    cache_write: float | None = Field(default=None, ge=0)
    """Input tokens written to the prompt cache; the input price when unset."""
