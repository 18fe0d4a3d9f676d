"""Scripted turns per second the emulator serves to a local client over loopback HTTP.

One run: ``python bench/emulator.py``. The emulator runs on its background thread (uvicorn on
127.0.0.1) with one long script; the client posts one request per turn on a keep-alive
connection and reads the whole answer. Clients: plain ``httpx2`` (JSON and SSE), a raw socket
(the server's own cost), and the official ``openai`` and ``anthropic`` SDKs. Client and server
share the machine's two cores. Bounded: a fixed number of turns per case. Target: >= 500
turns/s for the slowest real client.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import openai

from donegate.testing import Emulator
from donegate.testing.script import parse_script

TURNS = 2000
TARGET = 500.0


def script(n: int) -> Any:
    """A script of `n` turns alternating a tool call and a text answer, like a real run."""
    turns: list[dict[str, Any]] = []
    for i in range(n):
        if i % 2 == 0:
            turns.append({"tool_call": "get_order", "args": {"order_id": str(55000 + i)}})
        else:
            turns.append({"text": f"Order {55000 + i - 1} is on its way; refund started."})
    data = {"prompt": "where are my orders?", "tools": {"get_order": {"returns": {}}},
            "turns": turns, "max_steps": n + 1}  # fmt: skip
    return parse_script(data, source="bench")


def measure(name: str, send: Callable[[str], Any], n: int = TURNS) -> float:
    with Emulator(script(n)) as emu:
        send(emu.base_url)  # connect and warm up (one turn)
        start = time.perf_counter()
        for _ in range(n - 1):
            send(emu.base_url)
        elapsed = time.perf_counter() - start
        emu.assert_exhausted()
    rate = (n - 1) / elapsed
    print(f"{name:<34} {rate:8,.0f} turns/s  ({elapsed * 1000 / (n - 1):.2f} ms/turn)")
    return rate


class RawClient:
    """HTTP/1.1 over one socket, one write per request: what the server alone can do."""

    def __init__(self, body: bytes) -> None:
        self.sock: socket.socket | None = None
        self.request = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: bench\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        )

    def __call__(self, url: str) -> bytes:
        if self.sock is None:
            host, port = url.removeprefix("http://").rsplit(":", 1)
            self.sock = socket.create_connection((host, int(port)))
        self.sock.sendall(self.request)
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.sock.recv(65536)
        head, rest = data.split(b"\r\n\r\n", 1)
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )  # fmt: skip
        while len(rest) < length:
            rest += self.sock.recv(65536)
        return rest


def main() -> None:
    ask: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "x"}]}
    http = httpx2.Client()
    rates = [
        measure("httpx2, chat completions, JSON",
                lambda url: http.post(url + "/v1/chat/completions", json=ask).read()),
        measure("httpx2, chat completions, SSE",
                lambda url: http.post(url + "/v1/chat/completions",
                                      json={**ask, "stream": True}).read()),
    ]  # fmt: skip
    clients: dict[str, Any] = {}

    def oa(url: str) -> Any:
        client = clients.get(url) or openai.OpenAI(api_key="k", base_url=url + "/v1")
        clients[url] = client
        return client.chat.completions.create(model="gpt-4o-mini", messages=ask["messages"])

    def an(url: str) -> Any:
        client = clients.get(url) or anthropic.Anthropic(api_key="k", base_url=url)
        clients[url] = client
        return client.messages.create(
            model="claude-sonnet-4-6", max_tokens=100, messages=ask["messages"]
        )

    measure("raw socket (the server alone)", RawClient(json.dumps(ask).encode()))
    rates.append(measure("openai SDK, chat.completions.create", oa, TURNS // 2))
    rates.append(measure("anthropic SDK, messages.create", an, TURNS // 2))
    worst = min(rates)
    verdict = "meets" if worst >= TARGET else "MISSES"
    print(f"slowest client: {worst:,.0f} turns/s ({verdict} the target of {TARGET:,.0f}/s)")


if __name__ == "__main__":
    main()
