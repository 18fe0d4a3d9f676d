"""What every page module shares: the store, the auth, the templates and their filters.

Templates autoescape everything: task content is model output, and a claim that says
``<script>`` must be shown, not run. Nothing is marked safe but the app's own SVG chart, which is
built from numbers.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from donegate.review import Actor, Channel, login_name
from donegate.server.auth import LOCAL, Auth
from donegate.store import BrowseStore

__all__ = ["HERE", "Web", "duration", "fmt_time", "templates"]

HERE = Path(__file__).parent
"""The package folder: ``templates/`` and ``static/`` are beside this module."""
MAX_SHOWN = 20_000
"""Characters of one output shown on a page (the whole is in the store and the certificate)."""


def fmt_time(ts: float | None) -> str:
    """UTC time as ``2026-09-27 08:15:02Z``, ``-`` for none."""
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def iso(ts: float | None) -> str:
    """For ``<time datetime=...>``."""
    if ts is None:
        return ""
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).isoformat(timespec="seconds")


def duration(seconds: float | None) -> str:
    """``45s``, ``12m``, ``3h 05m``, ``2d 04h``."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600:02d}h"


def clip(text: Any, limit: int = MAX_SHOWN) -> str:
    """At most `limit` characters, saying how many were left out."""
    value = "" if text is None else str(text)
    if len(value) <= limit:
        return value
    return f"{value[:limit]}\n... [{len(value) - limit} more characters not shown]"


def as_json(value: Any) -> str:
    """Pretty JSON for a ``<pre>`` (escaped by the template like any text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=True)


def templates() -> Jinja2Templates:
    """The page templates, autoescaped, with the filters the pages use."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.ChainableUndefined,  # a report missing a part shows it empty, not a 500
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(fmt_time=fmt_time, iso=iso, duration=duration, clip=clip, as_json=as_json)
    env.globals["now"] = time.time
    return Jinja2Templates(env=env)


@dataclass(frozen=True, kw_only=True, slots=True)
class Web:
    """Handed to each page module's ``routes``."""

    store: BrowseStore
    """The store pages read and actions write."""
    auth: Auth
    """Tokens, sessions, CSRF."""
    templates: Jinja2Templates
    """The page templates."""
    os_user: str = field(default_factory=login_name)
    """The server's OS user, which an approval made through it records."""

    def who(self, request: Request) -> str:
        """Who is acting (the guard has already refused requests without a token)."""
        return str(request.scope.get("donegate.who") or LOCAL)

    def actor(self, request: Request, channel: Channel) -> Actor:
        """The reviewer acting, for a review action; 403 when the request is not a reviewer's
        (an ad-hoc ``--token`` may submit and retry, not approve, resolve or requeue)."""
        if not request.scope.get("donegate.reviewer"):
            raise HTTPException(
                403,
                f"{self.who(request)} is not a reviewer: approving, resolving and requeueing "
                "need a reviewer's secret (donegate reviewers add NAME)",
            )
        return Actor(name=self.who(request), channel=channel, os_user=self.os_user)

    def render(
        self, request: Request, name: str, *, status_code: int = 200, **context: Any
    ) -> Response:
        """A page, with the CSRF field value its forms need and the open-queue count."""
        try:
            open_count = self.store.queue_count(status="open")
        except Exception:  # the header's count must not take a page down with it
            open_count = -1
        response = self.templates.TemplateResponse(
            request,
            name,
            {
                "csrf": self.auth.csrf_token(request),
                "who": self.who(request),
                "reviewer": bool(request.scope.get("donegate.reviewer")),
                "auth_required": self.auth.required,
                "open_count": open_count,
                **context,
            },
            status_code=status_code,
        )
        self.auth.set_csrf(request, response)
        return response
