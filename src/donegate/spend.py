"""Spend: what a task's model calls cost, and the budget that stops them before they run away.

A `Budget` is one meter per task, shared by every loop that calls a model for it (the agent's
and the verifier's), so one total holds across continuations and retries; a worker carries the
spend of the task's earlier runs into it (``spent=``). The loop consults it once per step:

1. `Meter.admit` estimates the next request's input conservatively (the last input the provider
   reported plus a third of a token per character added since; on a first call, a third per
   character of the whole request), prices it, and answers either the request's settings with
   ``max_tokens`` clipped to what is left, or the reason the call cannot fit (then no call is
   made: ``budget exhausted``).
2. `Meter.charge` adds the call's reported usage, priced per call (a provider's price can
   depend on the request's size), under its model and role.

Prices come from `genai-prices` (pydantic's price database, imported on first use), keyed by
provider and model (``provider:model`` names), with cache reads and writes at the provider's
rates; a task's ``prices:`` override them per model. A replayed journal turn is charged when
the loop replays it and never stored apart, so it is counted once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from donegate.codec import message_to_json
from donegate.errors import UserError
from donegate.messages import Message, Usage
from donegate.models.base import ModelSettings, ToolSpec
from donegate.results import Spend, SpendLine

__all__ = [
    "Budget",
    "Meter",
    "Price",
    "PriceBook",
    "Spend",
    "SpendLine",
    "budget_of",
    "grant",
    "load_prices",
    "overrun",
    "parse_extra",
    "price_book",
    "price_of",
    "spend_of_calls",
    "unpriced",
]

CHARS_PER_TOKEN = 3
"""Characters counted as one token when estimating input: fewer than any tokenizer averages
on prose or code, so the estimate errs high."""
DEFAULT_MAX_TOKENS = 4096
"""The output limit taken for a request that sets none (the loop's and the Anthropic adapter's
default): a budget with less room left clips it."""
_OVERHEAD = 16  # tokens a provider adds per message (role markers); erring high again


@dataclass(frozen=True, kw_only=True, slots=True)
class Price:
    """USD per million tokens (a task's ``prices:`` entry)."""

    input: float
    """Uncached input tokens."""
    output: float
    """Output tokens, reasoning included."""
    cache_read: float | None = None
    """Input tokens read from the cache; the input price when unset."""
    cache_write: float | None = None
    """Input tokens written to the cache; the input price when unset."""

    def cost(self, usage: Usage) -> float:
        """USD for `usage` at these rates (cache tokens are part of the input)."""
        read = min(usage.cache_read_tokens, usage.input_tokens)
        write = min(usage.cache_write_tokens, usage.input_tokens - read)
        plain = usage.input_tokens - read - write
        total = (
            plain * self.input
            + read * (self.input if self.cache_read is None else self.cache_read)
            + write * (self.input if self.cache_write is None else self.cache_write)
            + usage.output_tokens * self.output
        )
        return total / 1_000_000


class PriceBook:
    """Prices by ``provider:model``: a task's overrides first, then `genai-prices`."""

    def __init__(self, overrides: Mapping[str, Price] | None = None) -> None:
        self.overrides = dict(overrides or {})

    def known(self, model: str) -> bool:
        """Whether `model` (``provider:model``) has a price."""
        return self.cost(model, Usage(input_tokens=1, output_tokens=1)) is not None

    def cost(self, model: str, usage: Usage) -> float | None:
        """USD for one call's `usage` on `model`; None when no price is known."""
        price = self._override(model)
        if price is not None:
            return price.cost(usage)
        provider, sep, name = model.partition(":")
        if not sep or not name:
            return None
        try:
            from genai_prices import Usage as PriceUsage
            from genai_prices import calc_price
        except ImportError:  # pragma: no cover - a core dependency; kept for a broken install
            raise UserError("usd budgets need genai-prices: pip install genai-prices") from None
        read = min(usage.cache_read_tokens, usage.input_tokens)
        write = min(usage.cache_write_tokens, usage.input_tokens - read)
        try:
            calculated = calc_price(
                PriceUsage(
                    input_tokens=usage.input_tokens,
                    cache_read_tokens=read,
                    cache_write_tokens=write,
                    output_tokens=usage.output_tokens,
                ),
                model_ref=name,
                provider_id=provider,
            )
        except (LookupError, ValueError):
            return None
        from decimal import (
            Decimal,
        )  # here: only a priced usage needs it (and `import donegate` not)

        return float(Decimal(calculated.total_price))

    def _override(self, model: str) -> Price | None:
        return self.overrides.get(model) or self.overrides.get(model.partition(":")[2])


@dataclass(kw_only=True)
class _Place:
    """Where one role's conversation stood at its last call: for the next input estimate."""

    input_tokens: int = 0
    messages: int = 0
    seen: bool = False


class Budget:
    """A task's token and dollar limits and its running spend (thread-safe enough: one run's
    loops call it one at a time)."""

    def __init__(
        self,
        *,
        tokens: int | None = None,
        usd: float | None = None,
        prices: PriceBook | None = None,
        spent: Spend | None = None,
    ) -> None:
        self.tokens = tokens
        """Input plus output tokens allowed over the whole task; None: no token limit."""
        self.usd = usd
        """USD allowed over the whole task; None: no dollar limit."""
        self.prices = prices or PriceBook()
        self.spend = spent or Spend()
        """What was charged so far (the earlier runs' spend included)."""
        self.charged = Spend()
        """What this budget's own loops charged (the earlier runs' spend not included)."""
        self.exhausted: str | None = None
        """Why a call was refused, once one was."""
        self._places: dict[str, _Place] = {}

    @property
    def limited(self) -> bool:
        """True when any limit is set."""
        return self.tokens is not None or self.usd is not None

    def require_prices(self, *models: str) -> None:
        """Refuse (one line) a usd budget on a model with no known price: before any call."""
        if self.usd is None:
            return
        for model in models:
            if not self.prices.known(model):
                raise UserError(
                    f"budget.usd: no price is known for model {model!r}; give one under "
                    "`prices:` in the task"
                )

    def meter(self, role: str) -> Meter:
        """The view one loop (the agent's, the verifier's) consults."""
        return Meter(self, role)

    def left(self) -> tuple[int | None, float | None]:
        """Tokens and USD left (None where there is no limit)."""
        tokens = None if self.tokens is None else self.tokens - self.spend.tokens
        usd = None if self.usd is None else self.usd - self.spend.usd
        return tokens, usd


class Meter:
    """One role's view of a `Budget`: what the loop calls before and after each model call."""

    __slots__ = ("budget", "role")

    def __init__(self, budget: Budget, role: str) -> None:
        self.budget = budget
        self.role = role

    def admit(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        settings: ModelSettings,
    ) -> ModelSettings | str:
        """The settings the next call may run with, or why it cannot be made."""
        budget = self.budget
        if budget.tokens is None and budget.usd is None:  # metered only: nothing to refuse
            return settings
        place = budget._places.setdefault(f"{self.role}\0{model}", _Place())
        estimate = _estimate(place, messages, tools)
        tokens_left, usd_left = budget.left()
        room: int | None = None
        if tokens_left is not None:
            room = tokens_left - estimate
            if room < 1:
                return self._refuse(
                    f"the next {self.role} call needs ~{estimate} input tokens and "
                    f"{max(tokens_left, 0)} of the {budget.tokens} token budget are left"
                )
        if usd_left is not None:
            afford = _affordable(budget.prices, model, estimate, usd_left)
            if afford is None or afford < 1:
                return self._refuse(
                    f"the next {self.role} call's ~{estimate} input tokens on {model} do not "
                    f"fit the ${max(usd_left, 0):.6f} left of the ${budget.usd:g} budget"
                )
            room = afford if room is None else min(room, afford)
        if room is None:
            return settings
        limit = settings.max_tokens if settings.max_tokens is not None else DEFAULT_MAX_TOKENS
        return settings if room >= limit else replace(settings, max_tokens=room)

    def charge(self, model: str, usage: Usage, messages: int) -> None:
        """Add one call's reported usage; `messages` is how long the request's transcript was."""
        budget = self.budget
        place = budget._places.setdefault(f"{self.role}\0{model}", _Place())
        place.input_tokens, place.messages, place.seen = usage.input_tokens, messages, True
        place.input_tokens += usage.output_tokens  # the answer is in the next request's input
        usd = budget.prices.cost(model, usage)
        line = SpendLine(model=model, role=self.role, calls=1, usage=usage, usd=usd)
        budget.spend = budget.spend + Spend(lines=(line,))
        budget.charged = budget.charged + Spend(lines=(line,))

    def _refuse(self, why: str) -> str:
        reason = f"budget exhausted: {why}"
        self.budget.exhausted = reason
        return reason


def _chars(message: Message) -> int:
    return len(json.dumps(message_to_json(message), ensure_ascii=False))


def _estimate(place: _Place, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
    """The next request's input tokens, erring high: the last reported input (with the answer
    it produced) plus what was added since; the whole request on a first call."""
    if place.seen and place.messages <= len(messages):
        added = messages[place.messages :]
        base = place.input_tokens
    else:
        added = messages
        base = (
            sum(
                len(json.dumps({"n": t.name, "d": t.description, "s": t.parameters})) for t in tools
            )
            // CHARS_PER_TOKEN
        )
    return base + sum(_chars(m) // CHARS_PER_TOKEN + _OVERHEAD for m in added)


def _affordable(prices: PriceBook, model: str, input_tokens: int, usd_left: float) -> int | None:
    """Output tokens `usd_left` pays for after `input_tokens` of input (priced as uncached or
    cache-written, whichever costs more); None when `model` has no price."""
    plain = prices.cost(model, Usage(input_tokens=input_tokens))
    written = prices.cost(model, Usage(input_tokens=input_tokens, cache_write_tokens=input_tokens))
    if plain is None or written is None:
        return None
    input_cost = max(plain, written)
    if input_cost > usd_left:
        return 0
    per_million = prices.cost(model, Usage(input_tokens=input_tokens, output_tokens=1_000_000))
    if per_million is None:
        return None
    rate = (per_million - plain) / 1_000_000
    if rate <= 0:
        return 1 << 30
    return int((usd_left - input_cost) / rate)


def load_prices() -> None:
    """Import `genai-prices` and its price data now (about half a second), so that a worker
    pays it before its first claim rather than inside a lease."""
    try:
        import genai_prices  # noqa: F401

        PriceBook().known("openai:gpt-4o")  # loads the data snapshot too
    except (ImportError, UserError):  # pragma: no cover - a core dependency
        pass


def price_of(spec: Any) -> Price:
    """A `Price` from anything with ``input``, ``output``, ``cache_read``, ``cache_write``
    (a task's ``prices:`` entry)."""
    return Price(
        input=spec.input,
        output=spec.output,
        cache_read=spec.cache_read,
        cache_write=spec.cache_write,
    )


def price_book(prices: Mapping[str, Any]) -> PriceBook:
    """The price book of a task's ``prices:`` (its entries first, then `genai-prices`): the one
    every pricing of a task's spend goes through, a run's meter and an agent CLI's transcript."""
    return PriceBook({k: price_of(v) for k, v in prices.items()})


def budget_of(budget: Any, prices: Mapping[str, Any], spent: Spend | None = None) -> Budget:
    """The meter of a task's ``budget:`` (None: metered, no limit) and ``prices:``."""
    return Budget(
        tokens=getattr(budget, "tokens", None),
        usd=getattr(budget, "usd", None),
        prices=price_book(prices),
        spent=spent,
    )


def parse_extra(text: str) -> tuple[str, float]:
    """``usd=0.50`` or ``tokens=10000`` (``--budget-extra``): the kind and the amount."""
    kind, sep, amount = text.partition("=")
    kind = kind.strip()
    if not sep or kind not in ("usd", "tokens"):
        raise UserError(f"--budget-extra {text!r}: expected usd=AMOUNT or tokens=COUNT")
    try:
        value = float(amount) if kind == "usd" else int(amount)
    except ValueError:
        raise UserError(f"--budget-extra {text!r}: {amount!r} is not a number") from None
    if not 0 < value < float("inf"):  # nan compares false: refused too
        raise UserError(f"--budget-extra {text!r}: the amount must be positive")
    return kind, value


def grant(spec: Mapping[str, Any], extra: Mapping[str, float]) -> dict[str, Any]:
    """`spec` (a task as JSON data) with its ``budget:`` raised by `extra` (kind -> amount).

    Only a kind the task's budget has can be raised: a task with no token budget has no token
    budget to grow (and one granted from nothing would be a limit nobody set).
    """
    budget = spec.get("budget")
    if not isinstance(budget, Mapping):
        raise UserError("--budget-extra: the task has no budget")
    raised = dict(budget)
    for kind, amount in extra.items():
        if raised.get(kind) is None:
            raise UserError(f"--budget-extra {kind}: the task's budget has no {kind} limit")
        total = raised[kind] + amount
        raised[kind] = int(total) if kind == "tokens" else round(float(total), 8)
    return {**spec, "budget": raised}


def overrun(limit: Any, spent: Spend, source: str) -> str | None:
    """``budget exhausted: ...`` when `spent` reached the task's `limit` (its ``budget:``
    field), naming what `source` reported; None while the budget holds."""
    if limit is None:
        return None
    over = []
    if limit.usd is not None and spent.usd >= limit.usd:
        over.append(f"{source} reported ${spent.usd:.6f} of the ${limit.usd:g} budget")
    if limit.tokens is not None and spent.tokens >= limit.tokens:
        over.append(f"{source} reported {spent.tokens} of the {limit.tokens} token budget")
    return "budget exhausted: " + "; ".join(over) if over else None


def unpriced(limit: Any, spent: Spend, source: str) -> str | None:
    """Why a task's ``usd`` `limit` cannot be kept when `spent` has tokens on a model with no
    price (its USD would count as nothing, so the budget would never be reached); None when
    every such model is priced, or the budget has no ``usd``."""
    if limit is None or limit.usd is None:
        return None
    for line in spent.lines:
        if line.usd is None and line.usage.total_tokens > 0:
            name = line.model.partition(":")[2] or line.model
            return (
                f"budget.usd cannot be kept: {source} reported {line.usage.total_tokens} tokens "
                f"on model {line.model!r}, which has no known price; give it one under "
                f"`prices:` in the task ({name}: {{input: USD, output: USD}} per million tokens)"
            )
    return None


def spend_of_calls(
    calls: Iterable[tuple[str, Usage]], role: str = "agent", *, prices: PriceBook | None = None
) -> Spend | None:
    """The spend of `calls` (``provider:model``, usage) read from an agent CLI's transcript,
    one line per model, priced per call by `prices` (a task's `price_book`; `genai-prices` alone
    when None) where the model's price is known; None for no calls."""
    book, lines = prices if prices is not None else PriceBook(), Spend()
    for model, usage in calls:
        usd = book.cost(model, usage)
        lines += Spend(lines=(SpendLine(model=model, role=role, calls=1, usage=usage, usd=usd),))
    return lines if lines.lines else None
