"""A cheaper ``__init__`` for the frozen, slotted dataclasses a run builds on every turn.

A frozen dataclass's generated ``__init__`` sets each field with
``object.__setattr__(self, name, value)``: a global and an attribute lookup, then a generic
setattr that looks the name up on the type again. On Python 3.11 that is about three times
what a plain dataclass pays a field, and a run builds some twenty such records (turns, calls,
usage, requests, actions, results). `fast_init` gives a class an ``__init__`` with the same
parameters that hands each value straight to its slot's descriptor: the same values land in
the same slots, so equality, hashing, repr, pickling and frozenness are the dataclass's own,
and construction costs about 40% less.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["fast_init"]

T = TypeVar("T")


class _Factory:
    """The default of a parameter whose field has a ``default_factory``: called when seen."""

    def __repr__(self) -> str:
        return "<factory>"  # as the dataclass's own signature shows it


_FACTORY = _Factory()


def fast_init(cls: type[T]) -> type[T]:
    """Replace the dataclass `cls`'s ``__init__`` with one that sets its slots directly.

    For frozen dataclasses with ``slots=True`` (apply it above ``@dataclass``). Fields with
    defaults, default factories, ``init=False`` and keyword-only fields are kept as the
    dataclass made them. Anything else (a ``__post_init__``, an ``InitVar``, a class without
    slots) is refused at import, so a change to a record cannot silently lose a step.
    """
    params = dataclasses.fields(cls)  # type: ignore[arg-type]
    made = cls.__init__.__code__
    wanted = made.co_varnames[1 : made.co_argcount + made.co_kwonlyargcount]
    if (
        "__slots__" not in cls.__dict__
        or hasattr(cls, "__post_init__")
        or wanted != tuple(f.name for f in params if f.init)
    ):
        raise TypeError(f"fast_init: {cls.__name__} must be slotted, with plain fields only")
    names: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in params:
        names[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        has_factory = f.default_factory is not dataclasses.MISSING
        if has_factory:
            names[f"_make_{f.name}"] = f.default_factory
        if not f.init:
            if has_factory:
                body.append(f"_set_{f.name}(self, _make_{f.name}())")
            elif f.default is not dataclasses.MISSING:
                names[f"_default_{f.name}"] = f.default
                body.append(f"_set_{f.name}(self, _default_{f.name})")
            continue
        if has_factory:
            param = f"{f.name}=_FACTORY"
            body.append(
                f"_set_{f.name}(self, _make_{f.name}() if {f.name} is _FACTORY else {f.name})"
            )
        else:
            if f.default is not dataclasses.MISSING:
                names[f"_default_{f.name}"] = f.default
                param = f"{f.name}=_default_{f.name}"
            else:
                param = f.name
            body.append(f"_set_{f.name}(self, {f.name})")
        (keyword if f.kw_only else positional).append(param)
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}) -> None:\n" + "".join(
        f"    {line}\n" for line in body or ["pass"]
    )
    exec(source, names)  # the source is built above from the dataclass's own fields
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
