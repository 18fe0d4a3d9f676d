"""Recording a real conversation into a script file, and refusing one that does not replay.

Two ways in, one `Recorder`:

* ``RecordingTransport(inner)`` wraps an SDK client's ``httpx2`` transport (sync and async);
* ``donegate emulate --record OUT.yaml --upstream URL`` (or ``donegate record``) runs the
  emulator as a proxy in front of the real API, for agents that only take a base URL.

`Recorder.build` writes the assistant turns as script turns: provider ids become ``c1, c2, ...``,
timestamps, usage, model names and request ids are dropped (they change between identical runs),
secrets are redacted (by key, by structure and by shape, see `donegate.testing._redact`, plus
any pattern the caller adds; the same `Redactor` cleans the emulator's request log), and tool
stubs come from the tool results the client sent back. `Recorder.save` then replays the script
through a `ScriptedModel`, turn by turn over the same wire format (and, for a conversation
shaped like donegate's loop, through the loop with the stubs), and raises `RecordingMismatch`
instead of writing a file that would not reproduce the run.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from donegate.errors import MissingExtra, RecordingMismatch, UserError
from donegate.messages import Turn
from donegate.testing import _replay
from donegate.testing._redact import DEFAULT_SECRET_PATTERNS, REDACTED, Redactor

try:
    import httpx2
except ImportError:  # pragma: no cover - every SDK extra brings httpx2
    raise MissingExtra("httpx2", "openai") from None

__all__ = [
    "DEFAULT_SECRET_PATTERNS",
    "REDACTED",
    "Exchange",
    "Recorder",
    "RecordingMismatch",
    "RecordingTransport",
    "Redactor",
    "api_for_path",
]


def api_for_path(path: str) -> tuple[str, bool] | None:
    """The wire format a request path belongs to, and whether the path asks for a stream."""
    from donegate.testing._routes import route

    r = route("POST", path, {}, "alt=sse")
    return (r.api, r.stream) if r.kind == "model" and r.api else None


@dataclass(frozen=True, kw_only=True, slots=True)
class Exchange:
    """One model request and the provider's answer, as sent."""

    api: str
    """The wire format."""
    request: Mapping[str, Any]
    """The JSON request body."""
    status: int
    """The HTTP status of the answer."""
    body: str
    """The answer: JSON text, or the raw stream."""
    stream: bool = False
    """The answer was streamed."""
    retry_after: float | None = None
    """The ``retry-after`` header of an error answer."""

    def turn(self) -> Turn:
        """The answer, classified by the wire format."""
        return _replay.classify_answer(
            self.api, self.status, self.body, stream=self.stream, retry_after=self.retry_after
        )


class Recorder:
    """Collects exchanges and turns them into a script file that provably replays."""

    def __init__(self, *, patterns: Iterable[str] = (), verify: str = "auto") -> None:
        self.redact = Redactor(patterns)
        """Applied to everything written: the script, and the emulator's ``--log`` lines."""
        self.verify = verify
        """``auto`` (the loop replay only for loop-shaped runs), ``turns`` or ``loop``."""
        self.exchanges: list[Exchange] = []
        """Every exchange recorded, in order."""
        self._lock = threading.Lock()

    def add(
        self,
        api: str,
        request: Mapping[str, Any],
        *,
        status: int,
        body: str,
        stream: bool = False,
        retry_after: str | float | None = None,
    ) -> None:
        """Record one exchange."""
        try:
            wait = float(retry_after) if retry_after is not None else None
        except ValueError:
            wait = None
        exchange = Exchange(
            api=api, request=request, status=status, body=body, stream=stream, retry_after=wait
        )
        with self._lock:
            self.exchanges.append(exchange)

    def build(self) -> dict[str, Any]:
        """The script, as data ready to dump (redacted, ids shortened, no usage)."""
        if not self.exchanges:
            raise UserError("nothing was recorded: no model request went through the recorder")
        return _replay.build_script(list(self.exchanges), self.redact)

    def check(self, data: Mapping[str, Any]) -> None:
        """Replay `data`; raise `RecordingMismatch` unless it reproduces the recorded run."""
        problems = _replay.verify(data, list(self.exchanges), self.redact, mode=self.verify)
        if problems:
            raise RecordingMismatch(
                "the recording does not replay to the recorded conversation, so it was not "
                "saved:\n" + "\n".join(f"  {p}" for p in problems)
            )

    def dumps(self) -> str:
        """The checked script as YAML text."""
        data = self.build()
        self.check(data)
        apis = sorted({e.api for e in self.exchanges})
        head = (
            f"# Recorded by donegate from {', '.join(apis)}: {len(data['turns'])} turn(s).\n"
            "# Ids shortened, usage and timestamps dropped, secrets redacted; read the diff.\n"
        )
        return head + _dump_yaml(data)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Check the recording and write it (YAML; JSON for a ``.json`` path)."""
        target = Path(path)
        if target.suffix == ".json":
            data = self.build()
            self.check(data)
            text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        else:
            text = self.dumps()
        target.write_text(text, encoding="utf-8")
        return target


class _Flow(dict[str, Any]):
    """A mapping written on one line, as hand-written scripts do."""


class _Dumper(yaml.SafeDumper):
    """Short turns and stubs on one line each, so a recording reads like a hand-written script."""


_Dumper.add_representer(
    _Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=True)
)


def _flow(value: Any) -> Any:
    if isinstance(value, dict):
        line = yaml.safe_dump(value, default_flow_style=True, width=10**6, allow_unicode=True)
        if len(line.strip()) <= 94:
            return _Flow(value)
    return value


def _dump_yaml(data: Mapping[str, Any]) -> str:
    out = dict(data)
    if "tools" in out:
        out["tools"] = {k: _flow(v) for k, v in out["tools"].items()}
    out["turns"] = [_flow(t) for t in out["turns"]]
    out["expect"] = _flow(out["expect"])
    text: str = yaml.dump(out, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return text


class RecordingTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport that records model exchanges on their way through `inner`.

    Works as a sync and as an async transport (whichever `inner` is); non-model requests pass
    through unrecorded.
    """

    def __init__(
        self,
        inner: Any,
        recorder: Recorder | None = None,
        *,
        patterns: Iterable[str] = (),
    ) -> None:
        self.inner = inner
        """The transport that talks to the provider (or a mock of it)."""
        self.recorder = recorder if recorder is not None else Recorder(patterns=patterns)
        """Receives every exchange."""

    def _add(self, request: httpx2.Request, response: httpx2.Response) -> None:
        found = api_for_path(request.url.path)
        if found is None:
            return
        api, path_stream = found
        try:
            body = json.loads(request.content or b"{}")
        except ValueError:
            return
        if not isinstance(body, dict):
            return
        self.recorder.add(
            api,
            body,
            status=response.status_code,
            body=response.content.decode("utf-8", "replace"),
            stream=path_stream or body.get("stream") is True,
            retry_after=response.headers.get("retry-after"),
        )

    def _copy(self, response: httpx2.Response) -> httpx2.Response:
        drop = ("content-encoding", "content-length", "transfer-encoding")
        headers = [(k, v) for k, v in response.headers.items() if k.lower() not in drop]
        return httpx2.Response(
            response.status_code,
            headers=headers,
            content=response.content,
            extensions=response.extensions,
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send through `inner`, read the whole answer, record it, hand back a copy."""
        response = self.inner.handle_request(request)
        response.read()
        self._add(request, response)
        return self._copy(response)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """`handle_request` for async clients."""
        response = await self.inner.handle_async_request(request)
        await response.aread()
        self._add(request, response)
        return self._copy(response)

    def close(self) -> None:
        """Close `inner`."""
        self.inner.close()

    async def aclose(self) -> None:
        """Close `inner` (async)."""
        await self.inner.aclose()
