"""The recorder's two halves: exchanges -> script data, and script data -> the same run again.

Kept apart from `donegate.testing.recorder` (the public transport and `Recorder`) because this
is where the comparison rules live: what must match for a recording to count as reproduced.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from donegate.errors import DonegateError
from donegate.messages import Ending, Message, ToolResult, Turn
from donegate.models.base import ModelRequest
from donegate.models.providers import by_wire
from donegate.models.registry import wire_format

if TYPE_CHECKING:
    from donegate.testing.recorder import Exchange

__all__ = ["build_script", "classify_answer", "transcript_of", "verify"]

Redact = Callable[[Any], Any]
_RAISED = re.compile(r"^\S+ raised \w+: ")


def classify_answer(
    api: str, status: int, body: str, *, stream: bool, retry_after: float | None = None
) -> Turn:
    """The turn an answer holds, as the wire format reads it."""
    wire = wire_format(api)
    if status >= 400:
        try:
            parsed: Any = json.loads(body)
        except ValueError:
            parsed = body
        return wire.parse_error(status, parsed, retry_after=retry_after)
    if stream:
        return wire.parse_stream(body)
    return wire.parse_response(json.loads(body))


def transcript_of(exchanges: Sequence[Exchange]) -> tuple[Message, ...]:
    """The recorded conversation: the last request's messages plus the last answer."""
    last = exchanges[-1]
    messages = wire_format(last.api).parse_request(last.request).messages
    turn = last.turn()
    if turn.message.parts:
        messages = (*messages, turn.message)
    return tuple(messages)


# -- building --------------------------------------------------------------------------------


def build_script(exchanges: Sequence[Exchange], redact: Redact) -> dict[str, Any]:
    """Script data for the recorded run (see `donegate.testing.script` for the format)."""
    turns = [e.turn() for e in exchanges]
    ids = short_ids(turns)
    first = wire_format(exchanges[0].api).parse_request(exchanges[0].request).messages
    system = "\n\n".join(m.text for m in first if m.role == "system" and m.text)
    user = next((m for m in first if m.role == "user" and m.text), None)
    results = _results(exchanges)
    stubs: dict[str, list[dict[str, Any]]] = {}
    seen: dict[str, int] = {}
    for turn in turns:
        for call in turn.tool_calls:
            answers = stubs.setdefault(call.name, [])
            found = results["id"].get(call.id)
            if found is None:  # Gemini may not echo ids: pair by name and position
                k = seen.get(call.name, 0)
                by_name = results["name"].get(call.name, [])
                found = by_name[k] if k < len(by_name) else None
            seen[call.name] = seen.get(call.name, 0) + 1
            if found is not None:
                answers.append(_stub_result(found))
    data: dict[str, Any] = {"prompt": user.text if user else "(no user message)"}
    if system:
        data["system"] = system
    if len(turns) >= 8:
        data["max_steps"] = len(turns) + 1
    data["tools"] = {name: _stub(answers) for name, answers in stubs.items()}
    data["turns"] = [_script_turn(t, ids, set(stubs)) for t in turns]
    data["expect"] = {"model_calls": len(turns), "unused_turns": 0}
    if not data["tools"]:
        del data["tools"]
    redacted: dict[str, Any] = redact(data)
    return redacted


def short_ids(turns: Sequence[Turn]) -> dict[str, str]:
    """Provider call ids -> ``c1, c2, ...`` in order of first appearance."""
    ids: dict[str, str] = {}
    for turn in turns:
        for call in turn.tool_calls:
            ids.setdefault(call.id, f"c{len(ids) + 1}")
    return ids


def _results(exchanges: Sequence[Exchange]) -> dict[str, Any]:
    by_id: dict[str, ToolResult] = {}
    by_name: dict[str, list[ToolResult]] = {}
    for e in exchanges:
        for m in wire_format(e.api).parse_request(e.request).messages:
            for r in m.results:
                if r.call_id not in by_id:
                    by_id[r.call_id] = r
                    by_name.setdefault(r.name, []).append(r)
    return {"id": by_id, "name": by_name}


def _stub_result(result: ToolResult) -> dict[str, Any]:
    if result.is_error:
        return {"raises": _RAISED.sub("", result.content)}
    try:
        value = json.loads(result.content)
    except ValueError:
        return {"returns": result.content}
    return {"returns": result.content if isinstance(value, str) else value}


def _stub(answers: list[dict[str, Any]]) -> dict[str, Any]:
    if not answers:
        return {"returns": None}
    if all(a == answers[0] for a in answers):
        return dict(answers[0])
    return {"results": answers}


def _script_turn(turn: Turn, ids: Mapping[str, str], tools: set[str]) -> dict[str, Any]:
    from donegate.testing.script import parse_script

    if turn.error is not None and turn.error.status:
        out: dict[str, Any] = {"http_error": turn.error.status}
        if turn.error.message:
            out["message"] = turn.error.message
        if turn.error.retry_after is not None:
            out["retry_after"] = turn.error.retry_after
    else:
        out = {}
        thinking = "".join(p.text for p in turn.thinking if not p.redacted)
        if thinking:
            out["thinking"] = thinking
        if turn.text or not (turn.tool_calls or turn.refusal is not None or thinking):
            out["text"] = turn.text
        if turn.refusal is not None:
            out["refusal"] = turn.refusal
        calls = [_script_call(c.name, c, ids) for c in turn.tool_calls]
        if len(calls) == 1:
            call = calls[0]
            out["tool_call"] = call.pop("tool")
            out.update(call)
        elif calls:
            out["tool_calls"] = calls
    stubs = {name: {"returns": None} for name in tools}
    probe = parse_script({"prompt": "p", "tools": stubs, "turns": [out]}).turns[0]
    if probe.ending is not turn.ending:
        out["ending"] = turn.ending.value
    described = turn.ending is Ending.REFUSED or (
        turn.ending is Ending.MALFORMED_TOOL_CALL and not turn.tool_calls
    )  # a malformed turn with no call keeps the provider's description (Gemini's finishMessage)
    if described and turn.detail and "http_error" not in out:
        out["stop_details"] = turn.detail
    return out


def _script_call(name: str, call: Any, ids: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"tool": name}
    if call.arguments is not None and call.parse_error is None:
        out["args"] = dict(call.arguments)
    else:
        out["args_raw"] = call.arguments_raw
    out["id"] = ids.get(call.id, call.id)
    return out


# -- verifying -------------------------------------------------------------------------------


def _exchange_path(e: Exchange) -> str:
    return request_path(e.api, str(e.request.get("model") or "gemini"), e.stream)


def request_path(api: str, model: str, stream: bool) -> str:
    """The request path of `api` (Gemini's names the model and whether it streams)."""
    if api == "gemini":
        verb = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return f"/v1beta/models/{model.removeprefix('models/')}:{verb}"
    row = by_wire(api)
    return row.paths[0] if row is not None and row.paths else "/"


def turn_key(turn: Turn, ids: Mapping[str, str], redact: Redact) -> Any:
    """What must match between a recorded and a replayed turn."""
    if turn.error is not None and turn.error.status:
        return redact({"ending": turn.ending.value, "http_error": turn.error.status})
    calls = [
        [c.name, ids.get(c.id, c.id), dict(c.arguments) if c.arguments is not None
         else c.arguments_raw]
        for c in turn.tool_calls
    ]  # fmt: skip
    return redact(
        {
            "ending": turn.ending.value,
            "text": turn.text,
            "refusal": turn.refusal,
            "thinking": "".join(p.text for p in turn.thinking if not p.redacted),
            "calls": calls,
        }
    )


def _content(result: ToolResult) -> Any:
    text = _RAISED.sub("", result.content)
    try:
        return json.loads(text)
    except ValueError:
        return text


def transcript_key(messages: Sequence[Message], ids: Mapping[str, str], redact: Redact) -> Any:
    """What must match between a recorded and a replayed transcript (system texts merged)."""
    system = "\n\n".join(m.text for m in messages if m.role == "system" and m.text)
    out: list[Any] = [["system", system]] if system else []
    for m in messages:
        if m.role == "system":
            continue
        calls = [[c.name, ids.get(c.id, c.id), c.arguments] for c in m.tool_calls]
        results = [[ids.get(r.call_id, r.call_id), _content(r)] for r in m.results]
        out.append([m.role, m.text, calls, results])
    return redact(out)


def loop_shaped(exchanges: Sequence[Exchange]) -> bool:
    """True when the run looks like donegate's loop: one user message, then calls and results."""
    if any(e.status >= 400 for e in exchanges):
        return False
    roles = [m.role for m in transcript_of(exchanges) if m.role != "system"]
    users = [
        m for m in transcript_of(exchanges) if m.role == "user" and not (m.results and not m.text)
    ]
    return bool(roles) and roles[0] == "user" and len(users) == 1


def verify(
    data: Mapping[str, Any], exchanges: Sequence[Exchange], redact: Redact, *, mode: str
) -> list[str]:
    """Problems found replaying `data` against the recorded exchanges (empty: reproduced)."""
    import httpx2

    from donegate.testing.player import ScriptedModel
    from donegate.testing.script import parse_script

    problems: list[str] = []
    try:
        script = parse_script(dict(data), source="recording")
    except DonegateError as exc:
        return [f"the script does not parse: {exc}"]
    ids = short_ids([e.turn() for e in exchanges])
    player = ScriptedModel(script, max_retries=0)
    for i, e in enumerate(exchanges):
        try:
            handle = player.handler(e.api)
        except DonegateError as exc:
            return [f"{e.api}: {exc}"]
        url = "http://replay" + _exchange_path(e)
        request = httpx2.Request("POST", url, json=dict(e.request))
        response = handle(request)
        wait = response.headers.get("retry-after")
        replayed = classify_answer(
            e.api,
            response.status_code,
            response.text,
            stream=e.stream,
            retry_after=float(wait) if wait else None,
        )
        want, got = turn_key(e.turn(), ids, redact), turn_key(replayed, {}, redact)
        if want != got:
            problems.append(f"turns[{i}]: recorded {want}, replayed {got}")
    try:
        player.assert_exhausted()
    except AssertionError as exc:
        problems.append(str(exc))
    if mode == "loop" or (mode == "auto" and loop_shaped(exchanges)):
        problems.extend(_loop_problems(script, exchanges, ids, redact))
    return problems


class _WireModel:
    """A `Model` that reaches a player over its wire format without an SDK (the loop check)."""

    def __init__(self, player: Any, api: str, *, stream: bool) -> None:
        self.api = api
        self.stream = stream
        self._handle = player.handler(api)
        self._wire = wire_format(api)

    @property
    def name(self) -> str:
        return f"replay:{self.api}"

    def request(self, request: ModelRequest) -> Turn:
        import httpx2

        model = request.model or "replay"
        body = self._wire.render_request(replace(request, model=model, stream=self.stream))
        path = request_path(self.api, model, self.stream)
        response = self._handle(httpx2.Request("POST", "http://replay" + path, json=body))
        wait = response.headers.get("retry-after")
        return classify_answer(
            self.api,
            response.status_code,
            response.text,
            stream=self.stream,
            retry_after=float(wait) if wait else None,
        )

    async def arequest(self, request: ModelRequest) -> Turn:
        return self.request(request)

    async def astream(self, request: ModelRequest) -> AsyncIterator[str | Turn]:
        yield self.request(request)


def _loop_problems(
    script: Any, exchanges: Sequence[Exchange], ids: Mapping[str, str], redact: Redact
) -> list[str]:
    import donegate
    from donegate.testing.player import ScriptedModel

    last = exchanges[-1]
    model = _WireModel(ScriptedModel(script, max_retries=0), last.api, stream=last.stream)
    result = donegate.run(
        script.prompt,
        model=model,
        tools=script.tools(),
        system=script.system,
        max_steps=script.max_steps,
        finish_tool=script.finish_tool,
    )
    want = transcript_key(transcript_of(exchanges), ids, redact)
    got = transcript_key(result.transcript, {}, redact)
    if want == got:
        return []
    for i, (w, g) in enumerate(zip(want, got, strict=False)):
        if w != g:
            return [f"transcript message [{i}]: recorded {w}, replayed {g}"]
    return [f"transcript: recorded {len(want)} messages, replayed {len(got)}"]
