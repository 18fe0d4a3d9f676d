"""Scripted turns per second the emulator serves to a local client over loopback HTTP.

One run: ``python bench/emulator.py``. The emulator runs on its background thread (uvicorn on
127.0.0.1) with one long script; the client posts one request per turn on a keep-alive
connection and reads the whole answer. Clients: plain ``httpx2`` (JSON and SSE), a raw socket
(the server's own cost), and the official ``openai`` and ``anthropic`` SDKs. Client and server
share the machine's two cores. Bounded: a fixed number of turns per case. Target: >= 500
turns/s for the slowest real client.

The growth case (``python bench/emulator.py growth``): one conversation of 10 and one of 200
tool turns, each adding a 10 KB tool result, so request N carries the N results before it. The
server runs in a process of its own (its CPU time and RSS read with psutil), and so does a bare
Starlette app that only receives and decodes (``json.loads``) the same requests, measured in the
same run, interleaved, median of 3. Targets: the emulator's memory grows < 50 MiB over the 200
turns, and its CPU per turn grows from 10 to 200 turns by no more than 2x the bare app's growth
(the requests themselves grow, so some growth is inherent).
"""

from __future__ import annotations

import json
import logging
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx2
import openai
import psutil

from donegate.testing import Emulator
from donegate.testing.script import parse_script

TURNS = 2000
TARGET = 500.0
RESULT = 10 * 1024
"""Bytes of each tool result in the growth case."""
GROWTH_TURNS = (10, 200)
MEMORY_TARGET = 50.0
"""MiB the emulator may grow by over the 200-turn conversation."""
GROWTH_TARGET = 2.0
"""The emulator's CPU-per-turn growth (10 -> 200 turns) over the bare app's, at most."""
WARM = 3
"""Small requests each server answers before the measured ones (imports, first-call caches)."""
REQUESTS = 400
"""Requests a short conversation is repeated to, at least (CPU time is read in 10 ms ticks)."""


def repeats(n: int) -> int:
    """How many conversations of `n` turns one measurement plays."""
    return max(1, REQUESTS // (n + 1))


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


# -- growth: a long conversation ----------------------------------------------------------


def growth_script(n: int) -> Any:
    """`n` turns calling ``read_file`` (ids ``c0``, ``c1``, ...), then a text answer."""
    turns: list[dict[str, Any]] = [
        {"tool_call": "read_file", "args": {"path": f"f{i}.txt"}, "id": f"c{i}"} for i in range(n)
    ]
    turns.append({"text": "done"})
    data = {"prompt": "read the files", "tools": {"read_file": {"returns": ""}},
            "turns": turns, "max_steps": n + 2}  # fmt: skip
    return parse_script(data, source=f"growth{n}")


def growth_bodies(n: int) -> Iterator[bytes]:
    """The chat-completions requests of an `n`-turn run, the history growing by 10 KB a turn."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    tool = {"type": "function", "function": {"name": "read_file", "parameters": schema}}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You read files."},
        {"role": "user", "content": "read the files"},
    ]
    for i in range(n + 1):
        body = {"model": "gpt-4o-mini", "messages": messages, "tools": [tool]}
        yield json.dumps(body).encode()
        args = json.dumps({"path": f"f{i}.txt"})
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": args},
        }
        line = f"line {i}: the quick brown fox jumps over the lazy dog\n"
        result = (line * (RESULT // len(line) + 1))[:RESULT]
        messages = [*messages, {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": f"c{i}", "content": result}]  # fmt: skip


def serve(kind: str, n: int) -> None:
    """The server process of the growth case: the emulator, or the bare app; prints its URL."""

    def ready(url: str) -> None:
        print(url, flush=True)

    if kind == "donegate":
        scripts = [growth_script(n) for _ in range(repeats(n))]
        Emulator(growth_script(WARM - 1), *scripts, port=0).serve(on_ready=ready)
        return
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ""}}
    answer = json.dumps({"id": "x", "object": "chat.completion", "choices": [choice]})

    async def endpoint(request: Request) -> Response:
        json.loads(await request.body())
        return Response(answer, media_type="application/json")

    app = Starlette(routes=[Route("/{path:path}", endpoint, methods=["POST"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    ready(f"http://127.0.0.1:{sock.getsockname()[1]}")
    config = uvicorn.Config(app, http="h11", log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


def grow(kind: str, n: int) -> tuple[float, float]:
    """One run: server CPU ms per measured turn and MiB of RSS growth (peak after warm-up).

    A short conversation is played `repeats` times, each a conversation of its own.
    """
    args = [sys.executable, __file__, "serve", kind, str(n)]
    server = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip() + "/v1/chat/completions"
        proc = psutil.Process(server.pid)
        with httpx2.Client(timeout=60) as http:
            warm = growth_bodies(WARM - 1)
            for body in warm:
                ask = {"content": body, "headers": {"x-donegate-conversation": "0"}}
                http.post(url, **ask).raise_for_status()  # type: ignore[arg-type]
            start, base = proc.cpu_times(), proc.memory_info().rss
            peak = base
            for k in range(repeats(n)):
                for body in growth_bodies(n):
                    ask = {"content": body, "headers": {"x-donegate-conversation": str(k + 1)}}
                    http.post(url, **ask).raise_for_status()  # type: ignore[arg-type]
                    peak = max(peak, proc.memory_info().rss)
            end = proc.cpu_times()
    finally:
        server.terminate()
        server.wait(10)
    cpu = (end.user - start.user) + (end.system - start.system)
    return cpu * 1000 / ((n + 1) * repeats(n)), (peak - base) / 2**20


def growth(runs: int = 3) -> None:
    """The growth case: figures and targets, emulator against the bare app in the same run."""
    seen: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for _ in range(runs):
        for n in GROWTH_TURNS:
            for kind in ("bare", "donegate"):
                seen.setdefault((kind, n), []).append(grow(kind, n))
    cpu = {k: statistics.median(c for c, _ in v) for k, v in seen.items()}
    mem = {k: statistics.median(m for _, m in v) for k, v in seen.items()}
    lo, hi = GROWTH_TURNS
    for kind in ("bare", "donegate"):
        print(f"{kind:<9} CPU/turn {cpu[kind, lo]:6.2f} ms at {lo} turns, {cpu[kind, hi]:6.2f} ms "
              f"at {hi} (x{cpu[kind, hi] / cpu[kind, lo]:.2f}); RSS +{mem[kind, hi]:.1f} MiB "
              f"over {hi} turns")  # fmt: skip
    factor = (cpu["donegate", hi] / cpu["donegate", lo]) / (cpu["bare", hi] / cpu["bare", lo])
    grown = mem["donegate", hi]
    verdict = "meets" if grown < MEMORY_TARGET else "MISSES"
    print(f"emulator memory growth {grown:.1f} MiB over {hi} turns x {RESULT // 1024} KB "
          f"({verdict} the target of < {MEMORY_TARGET:.0f} MiB)")  # fmt: skip
    verdict = "meets" if factor <= GROWTH_TARGET else "MISSES"
    print(f"emulator CPU growth {factor:.2f}x the bare app's "
          f"({verdict} the target of <= {GROWTH_TARGET:.0f}x)")  # fmt: skip


def main() -> None:
    # The turns case offers no tools: every tool turn is a warning line, not a figure.
    logging.getLogger("donegate.emulator").setLevel(logging.ERROR)
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
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["growth"]:
        growth()
    else:
        main()
        if sys.argv[1:2] != ["turns"]:
            growth()
