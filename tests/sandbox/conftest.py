"""Fixtures for the sandbox tests: bubblewrap (a skip where it cannot start), an agent's daemon."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from donegate.sandbox import Isolation, resolve


@pytest.fixture
def sandbox() -> Isolation:
    """The ``sandbox`` backend (bubblewrap), or a skip where this machine cannot start it."""
    found = resolve("auto")
    if found.backend != "sandbox":
        pytest.skip("bubblewrap cannot start a namespace here")
    return found


@pytest.fixture
def daemon() -> Iterator[Callable[[Callable[[], None]], None]]:
    """Start `act` in a loop every millisecond until the test ends: the agent's leftover."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def start(act: Callable[[], None]) -> None:
        def loop() -> None:
            while not stop.is_set():
                with contextlib.suppress(OSError):
                    act()
                time.sleep(0.001)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        threads.append(thread)

    yield start
    stop.set()
    for thread in threads:
        thread.join(5)
