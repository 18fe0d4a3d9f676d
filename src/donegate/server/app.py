"""`create_app`: the review UI as one Starlette app over a store.

Routes are split by page (`donegate.server.escalations`, `.tasks`, `.stops`); each module's
``routes(web)`` returns its own, so another (a JSON API) can be added beside them. Every request
first passes `_Guard`: the ``Host`` check on a tokenless (loopback) server, the token check when
tokens are configured, and the security headers on the way out (a CSP allowing only this
origin's own scripts and styles: every asset is packaged, nothing comes from a CDN).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from donegate.server import api, escalations, stops, tasks
from donegate.server._web import HERE, Web, templates
from donegate.server.auth import SESSION_COOKIE, SESSION_S, Auth, Token, loopback_host, parse_tokens
from donegate.store import BrowseStore

__all__ = ["create_app"]

_PUBLIC = ("/healthz", "/login", "/static/")
_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


def create_app(
    store: BrowseStore,
    *,
    token: str | Sequence[str] | Sequence[Token] | None = None,
    loopback_only: bool | None = None,
) -> Starlette:
    """The review UI over `store`.

    `token`: ``NAME:SECRET`` (or several): every request must then carry one (a login form
    sets a cookie). `loopback_only` (default: when there is no token) refuses requests whose
    ``Host`` is not a loopback name.
    """
    auth = Auth(_tokens(token), reviewers=store)
    web = Web(store=store, auth=auth, templates=templates())
    routes: list[BaseRoute] = [
        *_core_routes(web),
        *escalations.routes(web),
        *tasks.routes(web),
        *stops.routes(web),
        Mount("/api", routes=api.routes(web)),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: _error(web)},
    )
    guarded = loopback_only if loopback_only is not None else not auth.required
    app.add_middleware(_Guard, auth=auth, loopback_only=guarded)
    app.state.web = web
    return app


def _tokens(token: str | Sequence[str] | Sequence[Token] | None) -> list[Token]:
    if token is None:
        return []
    if isinstance(token, str):
        return parse_tokens([token])
    if all(isinstance(t, Token) for t in token):
        return [t for t in token if isinstance(t, Token)]
    return parse_tokens([t for t in token if isinstance(t, str)])


READ_ONLY = (
    "this server is read-only: add a reviewer (donegate reviewers add NAME) or start it with "
    "--token NAME:SECRET (or --token auto) to write"
)
_READS = frozenset({"GET", "HEAD", "OPTIONS"})


class _Guard:
    """Host check, token check, security headers."""

    def __init__(self, app: ASGIApp, *, auth: Auth, loopback_only: bool) -> None:
        self.app = app
        self.auth = auth
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        if self.loopback_only and not loopback_host(request.headers.get("host", "")):
            response: Response = Response(
                "this server answers only to a loopback host name\n",
                status_code=421,
                media_type="text/plain",
            )
            await response(scope, receive, with_headers)
            return
        path = scope["path"]
        required = await run_in_threadpool(lambda: self.auth.required)  # reads the store
        if not required and request.method not in _READS:
            # A tokenless server is read-only, loopback included: any local user could
            # otherwise submit a `run:` check for the worker to run as its own user.
            if path.startswith("/api/"):
                response = api.error_response(403, READ_ONLY, "authorization")
            else:
                response = Response(READ_ONLY + "\n", status_code=403, media_type="text/plain")
            await response(scope, receive, with_headers)
            return
        who = await run_in_threadpool(self.auth.who, request)  # a first bearer pays the KDF
        if who is None and not any(path == p or path.startswith(p) for p in _PUBLIC if p):
            if path.startswith("/api/"):  # a client, not a browser: no login redirect
                response = api.error_response(401, "a token is required", "authorization")
            elif request.method in ("GET", "HEAD") and path != "/live":
                target = quote(path + (f"?{request.url.query}" if request.url.query else ""))
                response = RedirectResponse(f"/login?next={target}", status_code=303)
            else:
                response = Response(
                    "a token is required\n", status_code=401, media_type="text/plain"
                )
            await response(scope, receive, with_headers)
            return
        scope["donegate.who"] = who.name if who is not None else None
        scope["donegate.reviewer"] = who is not None and who.reviewer
        await self.app(scope, receive, with_headers)


def _safe_next(value: object) -> str:
    text = value if isinstance(value, str) else "/"
    # only paths on this server: no scheme, no //host, no backslash tricks
    if not text.startswith("/") or text.startswith("//") or "\\" in text:
        return "/"
    return text


def _core_routes(web: Web) -> list[BaseRoute]:
    """The landing redirect, the health check, login and logout."""

    def landing(request: Request) -> Response:
        target = "/escalations" if web.store.queue_count(status="open") else "/tasks"
        return RedirectResponse(target, status_code=303)

    def health(request: Request) -> Response:
        try:
            open_count = web.store.queue_count(status="open")
        except Exception as exc:
            error = " ".join(str(exc).split())[:200]
            return JSONResponse({"status": "error", "store": error}, status_code=503)
        return JSONResponse({"status": "ok", "store": web.store.url, "open": open_count})

    def login_page(request: Request) -> Response:
        target = _safe_next(request.query_params.get("next"))
        return web.render(request, "login.html", next=target, error=None)

    async def login(request: Request) -> Response:
        form = await web.auth.form(request)
        secret = form.get("token")
        token = await run_in_threadpool(web.auth.match, secret) if isinstance(secret, str) else None
        target = _safe_next(form.get("next"))
        if token is None:
            return web.render(
                request,
                "login.html",
                status_code=401,
                next=target,
                error="That token is not valid.",
            )
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            web.auth.session(token),
            httponly=True,
            samesite="strict",
            path="/",
            max_age=SESSION_S,
        )
        return response

    async def logout(request: Request) -> Response:
        await web.auth.form(request)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    return [
        Route("/", landing),
        Route("/healthz", health),
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
    ]


def _error(web: Web) -> Callable[[Request, Exception], Response]:
    def error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if request.url.path.startswith("/api/"):
            return api.error_response(exc.status_code, str(exc.detail))
        if request.url.path == "/live":
            return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
        return web.render(
            request, "error.html", status_code=exc.status_code, message=str(exc.detail)
        )

    return error
