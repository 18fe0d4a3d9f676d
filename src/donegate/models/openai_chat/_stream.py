"""Streamed ``chat.completion.chunk`` events accumulated into one turn."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from donegate.messages import (
    Ending,
    Part,
    RefusalPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    Turn,
    Usage,
)
from donegate.models import _openai_common as common
from donegate.models._rules import error_turn, make_turn
from donegate.models._sse import loads
from donegate.models._values import MAPPING
from donegate.models.openai_chat._parse import API, custom_call, finish_signal, parse_usage


class ChatStream:
    """Accumulates ``chat.completion.chunk`` events."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.reason: str | None = None
        self.filtered: str | None = None
        self.usage = Usage()
        self.model: str | None = None
        self.id: str | None = None
        self.error: Turn | None = None
        self.done = False

    def feed(self, event: str | None, data: str) -> str:
        if data == "[DONE]":
            self.done = True
            return ""
        try:
            chunk = loads(data)
        except ValueError:
            return ""
        if not isinstance(chunk, MAPPING):
            return ""
        if "error" in chunk and "choices" not in chunk:
            self.error = common.openai_error_turn(API, None, chunk)
            return ""
        if isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        if isinstance(chunk.get("id"), str):
            self.id = chunk["id"]
        if isinstance(chunk.get("usage"), MAPPING):
            self.usage = parse_usage(chunk["usage"])
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], MAPPING):
            return ""
        choice = choices[0]
        if isinstance(choice.get("finish_reason"), str):
            self.reason = choice["finish_reason"]
            if self.reason == "content_filter":
                self.filtered = common.filter_detail(choice)
        delta = choice.get("delta")
        if not isinstance(delta, MAPPING):
            return ""
        for key in ("reasoning_content", "reasoning"):
            if isinstance(delta.get(key), str):
                self.thinking.append(delta[key])
        if isinstance(delta.get("refusal"), str):
            self.refusal.append(delta["refusal"])
        calls = delta.get("tool_calls")
        for i, raw in enumerate(calls if isinstance(calls, list) else ()):
            if isinstance(raw, MAPPING):
                self._call_delta(raw, i)
        legacy = delta.get("function_call")
        if isinstance(legacy, MAPPING):
            slot = self.calls.setdefault(-1, {"id": "call_0", "name": "", "args": []})
            slot["legacy"] = True
            self._merge_function(slot, legacy)
        content = delta.get("content")
        if isinstance(content, str) and content:
            self.text.append(content)
            return content
        return ""

    def _call_delta(self, raw: Mapping[str, Any], position: int) -> None:
        given = raw.get("index")
        index = given if isinstance(given, int) else position
        slot = self.calls.setdefault(index, {"id": None, "name": "", "args": []})
        if isinstance(raw.get("id"), str) and raw["id"]:
            slot["id"] = raw["id"]
        fn = raw.get("function")
        if isinstance(fn, MAPPING):
            self._merge_function(slot, fn)
        custom = raw.get("custom")
        if isinstance(custom, MAPPING):  # streamed custom call: ``input`` fragments
            slot["custom"] = True
            if isinstance(custom.get("name"), str):
                slot["name"] += custom["name"]
            if isinstance(custom.get("input"), str):
                slot["args"].append(custom["input"])

    @staticmethod
    def _merge_function(slot: dict[str, Any], fn: Mapping[str, Any]) -> None:
        if isinstance(fn.get("name"), str):
            slot["name"] += fn["name"]
        if isinstance(fn.get("arguments"), str):
            slot["args"].append(fn["arguments"])
        elif isinstance(fn.get("arguments"), MAPPING):
            slot["args"].append(json.dumps(fn["arguments"]))

    def finish(self) -> Turn:
        parts: list[Part] = []
        if self.thinking:
            parts.append(ThinkingPart(text="".join(self.thinking)))
        if self.text:
            parts.append(TextPart(text="".join(self.text)))
        if self.refusal:
            parts.append(RefusalPart(text="".join(self.refusal)))
        for n, (index, slot) in enumerate(sorted(self.calls.items())):
            if not (slot["id"] or slot["name"] or slot["args"]):
                continue  # a delta that carried nothing is not a call
            details: dict[str, Any] = {}
            if slot.get("legacy"):
                details["legacy"] = True
            call_id = slot["id"]
            if not call_id:
                call_id, details["synthetic_id"] = f"call_{max(index, n)}", True
            args = "".join(slot["args"])
            parts.append(
                custom_call(call_id, slot["name"], args, details)
                if slot.get("custom")
                else ToolCall.from_raw(
                    id=call_id,
                    name=slot["name"],
                    arguments_raw=args,
                    provider_details=details or None,
                )
            )
        if self.error is not None:
            err = self.error
            return error_turn(
                api=API,
                ending=Ending.ERROR,
                status=None,
                type_=err.error.type if err.error else None,
                message=err.detail or "stream error",
                raw_reason="error",
                parts=parts,
                usage=self.usage,
            )
        signal, detail = finish_signal(self.reason, ended=self.done)
        return make_turn(
            api=API,
            signal=signal,
            parts=parts,
            raw_reason=self.reason,
            detail=self.filtered or detail,
            usage=self.usage,
            model=self.model,
            response_id=self.id,
        )
