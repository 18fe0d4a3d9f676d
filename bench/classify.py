"""Responses classified per second, for typical turns of every served wire format.

One run: ``python bench/classify.py``. The responses are what each adapter renders for a typical
tool-call turn and a typical text answer (the providers' documented shapes), plus, when present,
the 200 responses of the shared recorded corpus. Figures:

- parsed bodies (dicts) per second; target >= 20,000/s;
- whole SSE streams (the same turns streamed, as raw text) per second; target >= 20,000/s;
- per byte: the streams against the same turns' JSON bodies classified from text
  (``json.loads`` + classify), in MB/s of input, measured in the same run; target: streams at
  least as fast per byte (ratio >= 1.0).
"""

from __future__ import annotations

import glob
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from donegate import classify
from donegate.messages import Ending, TextPart, ToolCall, Turn
from donegate.models._rules import make_turn
from donegate.models.registry import wire_format

SERVED = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")


def _corpus_dir() -> str:
    """The shared recorded corpus: ``shared/corpus`` next to the checkout or a level above."""
    here = os.path.dirname(os.path.abspath(__file__))
    for up in ("..", os.path.join("..", ".."), os.path.join("..", "..", "..")):
        path = os.path.join(here, up, "shared", "corpus", "provider-responses")
        if os.path.isdir(path):
            return path
    return ""


CORPUS = _corpus_dir()


def typical_turns() -> list[Turn]:
    text = "I've started a refund of EUR 14.99 for order 55219. " * 4
    return [
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


def rendered_text(*, stream: bool) -> list[tuple[str, str]]:
    """Each served format's typical turns as the provider sends them (JSON or SSE text)."""
    out = []
    for api in SERVED:
        for turn in typical_turns():
            body = wire_format(api).render_response(turn, stream=stream).body
            out.append((api, body if isinstance(body, str) else body.decode()))
    return out


def rendered() -> list[tuple[str, Any]]:
    return [(api, json.loads(text)) for api, text in rendered_text(stream=False)]


def corpus(*, stream: bool = False) -> list[tuple[str, Any]]:
    out = []
    for path in sorted(glob.glob(os.path.join(CORPUS, "*.json"))):
        with open(path) as f:
            record = json.load(f)
        if bool(record.get("stream")) == stream and "http_status" not in record:
            response = record["response"]
            out.append((record["api"], sse_text(response) if stream else response))
    return out


def sse_text(events: list[dict[str, Any]]) -> str:
    """A recorded stream (a list of events) as the SSE text it arrived as."""
    out = []
    for event in events:
        data = event.get("data")
        if "event" in event:
            out.append(f"event: {event['event']}\n")
        out.append(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(out)


def measure(
    bodies: list[tuple[str, Any]], seconds: float = 2.0, classify_one: Callable[..., Any] = classify
) -> float:
    """Responses per second (CPU time) of `classify_one` over `bodies`, round and round."""
    for api, body in bodies:  # warm up: imports and caches
        classify_one(api, body)
    done, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        for api, body in bodies:
            classify_one(api, body)
        done += len(bodies)
    return done / (time.process_time() - start)


def from_text(api: str, text: str) -> Turn:
    return classify(api, json.loads(text))


def as_stream(api: str, text: str) -> Turn:
    return classify(api, text, stream=True)


def per_byte(rounds: int = 3) -> tuple[float, float]:
    """MB/s of input: (SSE streams, the same turns' JSON bodies from text), interleaved, medians."""
    streams, bodies = rendered_text(stream=True), rendered_text(stream=False)
    stream_bytes = sum(len(t.encode()) for _, t in streams) / len(streams)
    body_bytes = sum(len(t.encode()) for _, t in bodies) / len(bodies)
    sse, json_text = [], []
    for _ in range(rounds):
        sse.append(measure(streams, 1.0, as_stream) * stream_bytes / 1e6)
        json_text.append(measure(bodies, 1.0, from_text) * body_bytes / 1e6)
    return statistics.median(sse), statistics.median(json_text)


def main() -> None:
    typical = rendered()
    print(f"rendered typical bodies ({len(typical)}): {measure(typical):,.0f} bodies/s")
    recorded = corpus()
    if recorded:
        print(f"recorded corpus 200 bodies ({len(recorded)}): {measure(recorded):,.0f} bodies/s")
    print("target: >= 20,000 bodies/s")
    streams = rendered_text(stream=True)
    rate = measure(streams, classify_one=as_stream)
    verdict = "ok" if rate >= 20_000 else "MISSED"
    print(f"rendered typical SSE streams ({len(streams)}): {rate:,.0f} streams/s")
    for api in SERVED:
        mine = [(a, t) for a, t in streams if a == api]
        print(f"  {api}: {measure(mine, 0.5, as_stream):,.0f} streams/s")
    recorded_streams = corpus(stream=True)
    if recorded_streams:
        rate_rec = measure(recorded_streams, classify_one=as_stream)
        print(f"recorded corpus streams ({len(recorded_streams)}): {rate_rec:,.0f} streams/s")
    print(f"target: >= 20,000 streams/s: {verdict}")
    sse, json_text = per_byte()
    ratio = sse / json_text
    print(
        f"per byte: SSE streams {sse:.1f} MB/s, the same turns' JSON bodies from text "
        f"(json.loads + classify) {json_text:.1f} MB/s: {ratio:.2f}x"
    )
    print(f"target: streams >= 1.0x per byte: {'ok' if ratio >= 1.0 else 'MISSED'}")


if __name__ == "__main__":
    main()
