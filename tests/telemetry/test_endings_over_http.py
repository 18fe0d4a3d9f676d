"""Each ending as a provider sends it, through the official SDK and donegate's adapter, to the
span (issue 28, "Done when": the standard attribute values for each ending).

`test_finish_reasons` checks the table on hand-made turns; here each ending is rendered on the
wire by the emulator (OpenAI Chat or Anthropic Messages), read back by the real SDK client and
classified by the adapter, and a task runs on it with the OTel sink and an in-memory exporter:
the broken turn's ``chat`` span carries the standard ``gen_ai.response.finish_reasons`` value,
the provider's raw reason and donegate's ending; the gate's verdicts are spans of their own; the
``invoke_agent`` span says how the run ended.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from donegate.harness.runner import run_task
from donegate.harness.spec import TaskSpec
from donegate.models.base import Model
from donegate.models.sdk import AnthropicModel, OpenAIChatModel
from donegate.telemetry.otel import OtelSink
from donegate.testing.emulator import Emulator
from donegate.testing.script import parse_script

WRITE = {"tool_call": "write_file", "args": {"path": "done.txt", "content": "ok"}, "id": "w1"}
DONE = {"text": "done.txt is written."}


def work(*first: dict[str, Any]) -> list[dict[str, Any]]:
    return [*first, WRITE, DONE]


@dataclass(frozen=True)
class Case:
    """One ending: the SDK that carries it, its turns, and what the spans and the run show."""

    sdk: str
    turns: list[dict[str, Any]]
    first: tuple[tuple[str, ...], str, str]
    """The broken turn's span: (finish_reasons, the raw reason, donegate.ending)."""
    verdicts: list[str]
    """The gate's span verdicts, in order."""
    status: str


MALFORMED = {"tool_call": "write_file", "args_raw": '{"path": ', "id": "bad1",
             "ending": "malformed_tool_call"}  # fmt: skip
ENDINGS = {
    "finished": Case(
        "openai", work(), (("tool_call",), "tool_calls", "tool_use"), ["accept"], "done"
    ),
    "truncated": Case(
        "openai",
        work({"text": "done.txt has", "ending": "truncated"}),
        (("length",), "length", "truncated"),
        ["accept"],
        "done",
    ),
    "filtered": Case(
        "openai",
        [{"text": "The", "ending": "filtered"}],
        (("content_filter",), "content_filter", "filtered"),
        [],
        "failed",
    ),
    "refused": Case(
        "anthropic",
        [{"text": "I can't help with that.", "ending": "refused"}],
        (("content_filter",), "refusal", "refused"),
        [],
        "failed",
    ),
    # the loop ends a run on an empty turn (the framework gates nudge instead)
    "empty": Case("openai", [{"text": ""}], (("stop",), "stop", "empty"), [], "failed"),
    "paused": Case(
        "anthropic",
        work({"text": "Searching.", "ending": "paused"}),
        (("pause_turn",), "pause_turn", "paused"),
        ["accept"],
        "done",
    ),
    "progress_report": Case(
        "openai",
        work({"text": "Progress: step 1 of 2; the file is next."}),
        (("stop",), "stop", "complete"),
        ["continue", "accept"],
        "done",
    ),
    "malformed_call": Case(
        "openai",
        work(MALFORMED),
        (("error",), "tool_calls", "malformed_tool_call"),
        ["accept"],
        "done",
    ),
}


def sdk_model(sdk: str, emu: Emulator) -> Model:
    """The official SDK's client on the emulator, wrapped by donegate's adapter."""
    if sdk == "anthropic":
        client: Any = anthropic.Anthropic(api_key="t", base_url=emu.base_url, max_retries=0)
        return AnthropicModel(client, "claude-sonnet-4-6")
    client = openai.OpenAI(api_key="t", base_url=emu.base_url + "/v1", max_retries=0)
    return OpenAIChatModel(client, "gpt-4o-mini")


@pytest.mark.parametrize("name", list(ENDINGS))
def test_each_ending_from_the_wire_carries_the_standard_values(name: str, tmp_path: Path) -> None:
    case = ENDINGS[name]
    sdk, turns, first, verdicts, status = (
        case.sdk,
        case.turns,
        case.first,
        case.verdicts,
        case.status,
    )
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    work_dir = tmp_path / "work"
    work_dir.mkdir()
    spec = TaskSpec(id=name, prompt="Write done.txt.", workdir=str(work_dir), type="writer",
                    checks=[{"file_exists": "done.txt"}], tools=["write_file"],  # type: ignore[list-item]
                    max_continuations=2)  # fmt: skip
    otel = OtelSink(task_id=name, task_type="writer", tracer_provider=provider)
    with Emulator(parse_script({"prompt": "Write done.txt.", "turns": turns})) as emu:
        result = run_task(spec, model=sdk_model(sdk, emu), events=otel, on_round=otel.gate_round,
                          completion_tool=None, output_dir=tmp_path / "out")  # fmt: skip
    spans = exporter.get_finished_spans()
    chats = [dict(s.attributes or {}) for s in spans if s.name.startswith("chat ")]
    assert len(chats) == len(turns), [c.get("donegate.ending") for c in chats]  # each turn served
    got = chats[0]
    assert (
        got["gen_ai.response.finish_reasons"],
        got["donegate.response.finish_reason"],
        got["donegate.ending"],
    ) == first
    allowed = {"stop", "length", "content_filter", "tool_call", "compaction", "error"}
    for chat in chats:  # a standard value wherever the schema has one (paused has none)
        reasons = chat["gen_ai.response.finish_reasons"]
        assert chat["donegate.ending"] == "paused" or set(reasons) <= allowed, chat
    gates = [dict(s.attributes or {}) for s in spans if s.name == "gate"]
    assert [g["donegate.gate.verdict"] for g in gates] == verdicts
    root = next(s for s in spans if s.name == "invoke_agent writer")
    assert (root.attributes or {})["gen_ai.agent.name"] == "writer"
    assert result.status == status
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id
               for s in spans if s is not root)  # fmt: skip
