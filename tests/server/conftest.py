"""Review-UI fixtures: a store filled by real worker runs, `donegate serve` on it, and Chromium.

The browser is Debian's ``/usr/bin/chromium`` driven by Playwright's sync API (``page`` here
replaces pytest-playwright's, which would keep a session-long Playwright running); nothing is
downloaded. Screenshots go to
``$DONEGATE_UI_SCREENSHOTS`` when set (``docs/img`` to refresh the docs), else to a temp folder.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from donegate.review import add_reviewer
from donegate.store.sql import SqlStore, open_store
from tests.server.fill import fill
from tests.store.conftest import store_url

__all__ = ["store_url"]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
REPO = Path(__file__).resolve().parents[2]
SIGNING_KEY = "ed25519:" + "5e" * 32
"""One key for the workers that sign and the server that checks (tests get their own homes)."""


@pytest.fixture(autouse=True)
def signing_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """Workers run in a test sign with the key `donegate serve` checks with."""
    monkeypatch.setenv("DONEGATE_SIGNING_KEY", SIGNING_KEY)
    return SIGNING_KEY


@dataclass
class Filled:
    """The filled store and where its runs left their files."""

    db: str
    """The SQLite URL."""
    root: Path
    """Workdirs and the data directory (``home``: certificates, reports)."""
    ids: dict[str, str]
    """Task ids by their role in the tests."""
    store: SqlStore
    """The test process's own connection to it."""
    secret: str
    """Reviewer ann's secret: the UI's login (only a reviewer approves, resolves, requeues)."""


@dataclass
class Served:
    """A running ``donegate serve``."""

    url: str
    """``http://127.0.0.1:PORT``."""
    process: subprocess.Popen[str]
    """The server process."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(db: str, *args: str, env: dict[str, str] | None = None) -> Served:
    """Start ``donegate serve --db DB ARGS`` on a free port and wait for ``/healthz``."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "donegate", "serve", "--db", db, "--port", str(port), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=REPO,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"donegate serve exited {process.returncode}: {process.stderr}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
                if response.status == 200:
                    return Served(url=url, process=process)
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise AssertionError("donegate serve did not answer /healthz within 60 s")


def stop(served: Served) -> None:
    """Stop a server started by `serve`."""
    served.process.terminate()
    try:
        served.process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.communicate()


@pytest.fixture
def store(store_url: str) -> Iterator[SqlStore]:
    """An opened, migrated store on each backend (SQLite; PostgreSQL when configured)."""
    s = open_store(store_url)
    yield s
    s.close()


@pytest.fixture(scope="session")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Filled]:
    """A SQLite store whose tasks ran through the worker (see `tests.server.fill`)."""
    root = tmp_path_factory.mktemp("ui")
    saved = {k: os.environ.get(k) for k in ("DONEGATE_HOME", "DONEGATE_SIGNING_KEY")}
    os.environ["DONEGATE_HOME"] = str(root / "home")  # the worker's and the server's data dir
    os.environ["DONEGATE_SIGNING_KEY"] = SIGNING_KEY
    db = f"sqlite:///{root / 'ui.db'}"
    store = open_store(db)
    try:
        ids = fill(store, root)
        yield Filled(db=db, root=root, ids=ids, store=store, secret=add_reviewer(store, "ann"))
    finally:
        store.close()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def served(filled: Filled) -> Iterator[Served]:
    """``donegate serve`` on the filled store, loopback; its reviewer signs in (writes need it)."""
    server = serve(filled.db, env={"DONEGATE_SIGNING_KEY": SIGNING_KEY})
    yield server
    stop(server)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium through Playwright's sync API (never a downloaded browser).

    Module-scoped, and stopped after: a sync Playwright left running holds an event loop on
    the main thread, which the asyncio tests collected after these would trip over.
    """
    if not Path(CHROMIUM).exists():
        raise AssertionError(f"{CHROMIUM} is missing: apt-get install -y chromium")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, served: Served, filled: Filled) -> Iterator[Page]:
    """A fresh browser context (its own cookies) on the served UI."""
    context = browser.new_context(
        base_url=served.url,
        viewport={"width": 1280, "height": 900},
        extra_http_headers={"Authorization": f"Bearer {filled.secret}"},  # reviewer ann
    )
    context.set_default_timeout(15_000)
    opened = context.new_page()
    yield opened
    context.close()


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go."""
    target = os.environ.get("DONEGATE_UI_SCREENSHOTS")
    if target:
        path = Path(target)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("shots")
