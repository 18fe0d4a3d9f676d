"""Bodies classified per second, for typical non-streaming bodies of every served wire format.

One run: ``python bench/classify.py``. The bodies are what each adapter renders for a typical
tool-call turn and a typical text answer (the providers' documented shapes), plus, when present,
the non-streaming 200 bodies of the shared recorded corpus. Target: >= 20,000 bodies/s.
"""

from __future__ import annotations

import glob
import json
import os
import time
from typing import Any

from donegate import classify
from donegate.messages import Ending, TextPart, ToolCall
from donegate.models._rules import make_turn
from donegate.models.registry import wire_format

SERVED = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")
CORPUS = os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "corpus", "provider-responses"
)


def rendered() -> list[tuple[str, Any]]:
    text = "I've started a refund of EUR 14.99 for order 55219. " * 4
    turns = [
        make_turn(api="x", signal=Ending.COMPLETE, parts=[TextPart(text=text)], raw_reason="stop"),
        make_turn(
            api="x",
            signal=Ending.TOOL_USE,
            parts=[
                TextPart(text="Let me look that up."),
                ToolCall.from_args(id="c1", name="get_order", arguments={"order_id": "55219"}),
            ],
            raw_reason="tool_calls",
        ),
    ]
    return [
        (api, json.loads(wire_format(api).render_response(t).body)) for api in SERVED for t in turns
    ]


def corpus() -> list[tuple[str, Any]]:
    out = []
    for path in sorted(glob.glob(os.path.join(CORPUS, "*.json"))):
        with open(path) as f:
            record = json.load(f)
        if not record.get("stream") and "http_status" not in record:
            out.append((record["api"], record["response"]))
    return out


def measure(bodies: list[tuple[str, Any]], seconds: float = 2.0) -> float:
    for api, body in bodies:  # warm up: imports and caches
        classify(api, body)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for api, body in bodies:
            classify(api, body)
        done += len(bodies)
    return done / (time.perf_counter() - start)


def main() -> None:
    typical = rendered()
    print(f"rendered typical bodies ({len(typical)}): {measure(typical):,.0f} bodies/s")
    recorded = corpus()
    if recorded:
        print(f"recorded corpus 200 bodies ({len(recorded)}): {measure(recorded):,.0f} bodies/s")
    print("target: >= 20,000 bodies/s")


if __name__ == "__main__":
    main()
