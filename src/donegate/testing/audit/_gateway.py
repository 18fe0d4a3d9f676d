"""Gateway mode: the emulator is a proxy's upstream; every ending must arrive unchanged.

Each scenario is one conversation of an emulator the gateway forwards to (selected by the
``x-donegate-conversation`` header, which a pass-through proxy keeps). donegate sends the
scenario's request through the gateway once per turn, raw HTTP in the format's own shape, and
compares the turn that arrives with the turn the emulator renders directly: ending, raw finish
reason, stop details, text, refusal and usage. A broken ending that arrives as a clean one
(``length`` mapped to ``stop``) is ``false_done``; any other difference is ``altered``.
Scenarios built on transport faults are skipped: a gateway may rightly retry them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from donegate.errors import UserError
from donegate.messages import Ending, Message, TextPart, Turn
from donegate.models.base import ModelRequest, ToolSpec
from donegate.models.providers import PROVIDERS
from donegate.models.registry import wire_format
from donegate.testing._replay import request_path
from donegate.testing.audit._runner import AuditReport, ScenarioResult, expressible
from donegate.testing.audit._scenarios import PROMPT, SCENARIOS, Scenario, ToolShape
from donegate.testing.emulator import CONVERSATION_HEADER, Emulator

__all__ = ["audit_gateway", "gateway_upstream"]

_MODEL = "gpt-4o-mini"


def _path(api: str) -> str:
    """The non-streamed endpoint of `api` (the emulator's own routes)."""
    spoken = [p.wire for p in PROVIDERS if p.emulated]
    if api not in spoken:
        raise UserError(f"--api {api}: gateway mode speaks {', '.join(spoken)}")
    return request_path(api, "gemini-2.5-flash", stream=False)


def gateway_upstream(
    scenarios: Sequence[Scenario] | None = None, *, tool: ToolShape | None = None, port: int = 0
) -> Emulator:
    """The (unstarted) emulator a gateway under audit must forward to: one conversation each."""
    tool = tool or ToolShape()
    emu = Emulator(port=port)
    for scenario in scenarios or SCENARIOS:
        emu.load(scenario.script(tool), name=scenario.name)
    return emu


def _facts(turn: Turn) -> dict[str, Any]:
    parts = [
        {k: v for k, v in vars_of(p).items() if k not in ("id", "provider_details")}
        for p in turn.message.parts
    ]
    return {
        "ending": turn.ending.value,
        "raw_reason": turn.raw_reason,
        "detail": turn.detail,
        "usage": vars_of(turn.usage),
        "parts": parts,
    }


def vars_of(value: Any) -> dict[str, Any]:
    slots = getattr(value, "__slots__", ())
    fields = getattr(value, "__dataclass_fields__", None)
    names = list(fields) if fields else list(slots)
    return {n: getattr(value, n) for n in names}


def audit_gateway(
    gateway: str,
    *,
    api: str,
    upstream: Emulator,
    scenarios: Sequence[Scenario] | None = None,
    tool: ToolShape | None = None,
    timeout: float = 30.0,
) -> AuditReport:
    """Send each scenario through `gateway` (whose upstream is `upstream`) and compare endings."""
    import httpx2

    tool = tool or ToolShape()
    path = _path(api)
    fmt = wire_format(api)
    request = ModelRequest(
        model=_MODEL,
        messages=(Message(role="user", parts=(TextPart(text=PROMPT),)),),
        tools=(ToolSpec(name=tool.name, parameters={"type": "object"}),),
    )
    body = json.dumps(fmt.render_request(request)).encode("utf-8")
    started = time.monotonic()
    results: list[ScenarioResult] = []
    with httpx2.Client(timeout=timeout) as client:
        for scenario in scenarios or SCENARIOS:
            results.append(
                _one(
                    client,
                    scenario,
                    url=gateway.rstrip("/") + path,
                    path=path,
                    body=body,
                    api=api,
                    tool=tool,
                )
            )
    return AuditReport(
        command=("--gateway", gateway), api=api, scenarios=tuple(results),
        seconds=time.monotonic() - started,
    )  # fmt: skip


def _one(
    client: Any, scenario: Scenario, *, url: str, path: str, body: bytes, api: str, tool: ToolShape
) -> ScenarioResult:
    import httpx2

    def result(verdict: str, detail: str, requests: int = 0) -> ScenarioResult:
        return ScenarioResult(
            name=scenario.name, api=api, verdict=verdict, exit_code=None, answer="",
            requests=requests, detail=detail,
        )  # fmt: skip

    if scenario.recoverable:
        return result("skipped", "a transport fault: a gateway may rightly retry it")
    if (why := expressible(scenario, api, tool)) is not None:
        return result("skipped", why)
    fmt = wire_format(api)
    direct = Emulator()
    direct.load(scenario.script(tool), name=scenario.name)
    heads = {"content-type": "application/json", CONVERSATION_HEADER: scenario.name}
    for index in range(len(scenario.turns(tool))):
        want_reply = direct.handle("POST", path, headers=heads, body=body)
        try:
            got_reply = client.post(url, content=body, headers=heads)
        except httpx2.HTTPError as exc:
            return result("crashed", f"turn {index}: {exc.__class__.__name__}: {exc}", index)
        if got_reply.status_code != want_reply.status:
            detail = (
                f"turn {index}: status {got_reply.status_code}, upstream sent {want_reply.status}"
            )
            return result("altered", detail, index + 1)
        want = fmt.parse_response(json.loads(want_reply.body))
        try:
            got = fmt.parse_response(got_reply.json())
        except ValueError as exc:
            return result("altered", f"turn {index}: unreadable body: {exc}", index + 1)
        w, g = _facts(want), _facts(got)
        if w != g:
            changed = [k for k in w if w[k] != g[k]]
            detail = (
                f"turn {index}: {', '.join(f'{k} {w[k]!r} arrived as {g[k]!r}' for k in changed)}"
            )
            broken = want.ending not in (Ending.COMPLETE, Ending.TOOL_USE)
            clean = got.ending in (Ending.COMPLETE, Ending.TOOL_USE)
            return result("false_done" if broken and clean else "altered", detail[:400], index + 1)
    return result("ok", "every ending arrived unchanged", len(scenario.turns(tool)))
