"""``donegate serve``: the review UI over a task store (extra ``server``).

Server-rendered pages for the people who look after the queue: the escalations (oldest first,
each with its report, and Resolve / Requeue), the tasks (filtered and paged; each with its runs'
journals, evidence, checklist and certificate), and the stop-reason breakdown with its spikes.
`create_app` builds the Starlette app; the CLI serves it with uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from donegate.errors import MissingExtra

if TYPE_CHECKING:
    from donegate.server.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        try:
            import jinja2  # noqa: F401 - probe the extra before importing the app
            import starlette  # noqa: F401
        except ImportError as exc:
            raise MissingExtra(exc.name or "starlette", "server") from None
        from donegate.server.app import create_app

        return create_app
    raise AttributeError(name)
