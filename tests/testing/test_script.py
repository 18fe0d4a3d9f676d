"""Script files: each turn kind parsed to its canonical turn, stubs, errors naming the field."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from donegate.errors import ScriptError, ToolError
from donegate.messages import (
    Ending,
    ErrorInfo,
    RefusalPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    Turn,
    Usage,
)
from donegate.testing.script import (
    Script,
    StubTool,
    ToolStubError,
    check_for_task,
    describe_turn,
    load_script,
    parse_script,
)

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
STUBS = {"get_order": {"returns": {"sku": "MUG-01"}}, "search": {"returns": []}}


def turns(*raw: Any, tools: dict[str, Any] | None = None) -> tuple[Turn, ...]:
    return parse_script({"prompt": "p", "tools": tools or STUBS, "turns": list(raw)}).turns


def one(raw: Any) -> Turn:
    return turns(raw)[0]


# -- turn kinds ------------------------------------------------------------------------------


def test_a_tool_call_with_an_explicit_id() -> None:
    turn = one({"tool_call": "get_order", "args": {"order_id": "55219"}, "id": "c1"})
    assert turn.ending is Ending.TOOL_USE
    assert turn.message.role == "assistant"
    assert turn.message.parts == (
        ToolCall(
            id="c1",
            name="get_order",
            arguments_raw='{"order_id":"55219"}',
            arguments={"order_id": "55219"},
        ),
    )


def test_ids_default_to_c1_c2_across_the_script_skipping_explicit_ones() -> None:
    parsed = turns(
        {"tool_call": "search", "args": {"q": "a"}},
        {"tool_call": "search", "args": {"q": "b"}, "id": "c2"},
        {"tool_calls": [{"tool": "search", "args": {"q": "c"}}, {"tool": "get_order"}]},
        {"tool_call": "search", "args": {"q": "d"}, "id": "custom"},
        {"tool_call": "search"},
    )
    ids = [[c.id for c in t.tool_calls] for t in parsed]
    assert ids == [["c1"], ["c2"], ["c3", "c4"], ["custom"], ["c5"]]


def test_several_calls_in_one_turn_keep_their_order() -> None:
    turn = one({"tool_calls": [{"tool": "search", "args": {"q": "x"}}, {"tool": "get_order"}]})
    assert turn.ending is Ending.TOOL_USE
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [
        ("search", {"q": "x"}),
        ("get_order", {}),
    ]


def test_text_beside_a_call_is_a_tool_use_turn_with_text_first() -> None:
    turn = one({"text": "Let me look.", "tool_call": "search", "args": {"q": "x"}})
    assert turn.ending is Ending.TOOL_USE
    assert isinstance(turn.message.parts[0], TextPart)
    assert turn.text == "Let me look."
    assert [c.name for c in turn.tool_calls] == ["search"]


def test_a_normal_finishing_turn_is_complete() -> None:
    turn = one({"text": "I've started a refund."})
    assert turn == Turn(message=turn.message, ending=Ending.COMPLETE)
    assert turn.message.parts == (TextPart(text="I've started a refund."),)


def test_truncated_text() -> None:
    turn = one({"text": "The refund has been", "ending": "truncated"})
    assert turn.ending is Ending.TRUNCATED
    assert turn.text == "The refund has been"


def test_a_call_truncated_mid_arguments_keeps_its_partial_string() -> None:
    turn = one({"tool_call": "search", "args_raw": '{"q": "x', "ending": "truncated"})
    assert turn.ending is Ending.TRUNCATED
    (call,) = turn.tool_calls
    assert call.arguments_raw == '{"q": "x'
    assert call.arguments is None
    assert call.parse_error is not None


def test_unparseable_arguments_without_an_ending_are_a_malformed_call() -> None:
    turn = one({"tool_call": "search", "args_raw": '{"q": "x'})
    assert turn.ending is Ending.MALFORMED_TOOL_CALL
    assert turn.detail is not None and turn.detail.startswith("search: arguments are not valid")


def test_parseable_raw_arguments_are_a_normal_call() -> None:
    turn = one({"tool_call": "search", "args_raw": '{"q": "x"}'})
    assert turn.ending is Ending.TOOL_USE
    assert turn.tool_calls[0].arguments == {"q": "x"}
    assert turn.tool_calls[0].arguments_raw == '{"q": "x"}'


def test_thinking_only_is_an_empty_turn_with_a_progress_part() -> None:
    turn = one({"thinking": "Progress: 4 of 6 done."})
    assert turn.ending is Ending.EMPTY
    assert turn.message.parts == (ThinkingPart(text="Progress: 4 of 6 done.", progress=True),)
    assert turn.text == ""


def test_whitespace_text_is_empty() -> None:
    assert one({"text": "  \n"}).ending is Ending.EMPTY


def test_filtered() -> None:
    turn = one({"text": "The attacker first", "ending": "filtered"})
    assert turn.ending is Ending.FILTERED
    assert turn.text == "The attacker first"


def test_refused_text_is_the_refusal_explanation() -> None:
    turn = one({"text": "I can't help with that.", "ending": "refused"})
    assert turn.ending is Ending.REFUSED
    assert turn.message.parts == (RefusalPart(text="I can't help with that."),)
    assert turn.text == ""
    assert turn.refusal == "I can't help with that."


def test_a_refusal_key_refuses_and_keeps_text_visible() -> None:
    turn = one({"text": "Sorry.", "refusal": "policy"})
    assert turn.ending is Ending.REFUSED
    assert turn.message.parts == (TextPart(text="Sorry."), RefusalPart(text="policy"))


def test_stop_details_is_the_refusal_category() -> None:
    turn = one({"ending": "refused", "stop_details": "reasoning_extraction"})
    assert turn.ending is Ending.REFUSED
    assert turn.detail == "reasoning_extraction"
    assert turn.message.parts == ()


@pytest.mark.parametrize(
    "ending", ["paused", "context_exceeded", "error", "complete", "empty", "malformed_tool_call"]
)
def test_an_explicit_ending_wins(ending: str) -> None:
    turn = one({"text": "Searching.", "ending": ending})
    assert turn.ending is Ending(ending)
    assert turn.text == "Searching."
    assert turn.error is None


def test_usage_is_kept() -> None:
    turn = one({"text": "ok", "usage": {"input_tokens": 120, "output_tokens": 7}})
    assert turn.usage == Usage(input_tokens=120, output_tokens=7)


def test_an_http_error_turn() -> None:
    turn = one({"http_error": 529})
    assert turn.ending is Ending.ERROR
    assert turn.message.parts == ()
    assert turn.error == ErrorInfo(status=529)
    assert turn.raw_reason == "529"


def test_an_http_error_with_retry_after_and_message() -> None:
    turn = one({"http_error": 429, "retry_after": 2, "message": "Rate limit reached"})
    assert turn.ending is Ending.ERROR
    assert turn.error == ErrorInfo(status=429, message="Rate limit reached", retry_after=2.0)
    assert turn.detail == "Rate limit reached"


@pytest.mark.parametrize(
    "raw",
    [
        {"http_error": 400, "message": "prompt is too long: 210000 tokens > 200000 maximum"},
        {"http_error": 413},
        {"http_error": 400, "ending": "context_exceeded"},
    ],
)
def test_an_http_error_that_implies_context_exceeded(raw: dict[str, Any]) -> None:
    turn = one(raw)
    assert turn.ending is Ending.CONTEXT_EXCEEDED
    assert turn.error is not None and turn.error.status == raw["http_error"]
    assert turn.error.message  # a message every adapter reads back as context_exceeded


def test_a_finish_tool_call_is_a_known_tool() -> None:
    script = parse_script(
        {
            "prompt": "p",
            "finish_tool": {"schema": {"type": "object", "required": ["answer"]}},
            "turns": [{"tool_call": "submit_answer", "args": {"answer": 42}}],
        }
    )
    assert script.finish_tool is not None
    assert script.finish_tool.name == "submit_answer"
    assert script.finish_tool.schema == {"type": "object", "required": ["answer"]}
    assert script.turns[0].tool_calls[0].name == "submit_answer"


def test_describe_turn() -> None:
    parsed = turns(
        {"tool_calls": [{"tool": "search"}, {"tool": "get_order"}]},
        {"text": "I've started a refund."},
        {"http_error": 529},
        {"thinking": "hm"},
        {"ending": "refused"},
    )
    assert [describe_turn(t) for t in parsed] == [
        "tool_use: search(c1), get_order(c2)",
        'complete: "I\'ve started a refund."',
        "error: HTTP 529",
        "empty: thinking only",
        "refused",
    ]


# -- the whole script ------------------------------------------------------------------------


def test_the_refund_script() -> None:
    script = load_script(SCRIPTS / "refund.yaml")
    assert script.prompt == "order 55219 arrived smashed"
    assert script.system is not None and script.system.startswith("You are a support agent")
    assert script.max_steps == 8
    assert script.finish_tool is None
    assert list(script.stubs) == ["get_order", "get_refund_policy", "start_refund"]
    assert script.stubs["start_refund"].side_effect
    assert [t.ending for t in script.turns] == [Ending.TOOL_USE] * 3 + [Ending.COMPLETE]
    assert [c.id for t in script.turns for c in t.tool_calls] == ["c1", "c2", "c3"]
    assert script.turns[1].tool_calls[0].arguments == {
        "sku": "MUG-01",
        "purchased_at": "2026-07-30",
    }
    assert script.expect.status == "complete"
    assert script.expect.model_calls == 4
    assert script.expect.tool_calls == {"get_order": 1, "get_refund_policy": 1, "start_refund": 1}
    assert script.expect.unused_turns == 0
    assert script.source == str(SCRIPTS / "refund.yaml")


def test_defaults() -> None:
    script = parse_script({"prompt": "p", "turns": [{"text": "hi"}]})
    assert script == Script(prompt="p", turns=script.turns)
    assert script.max_steps == 8
    assert script.stubs == {}
    assert script.expect.status is None and script.expect.tool_calls == {}


@pytest.mark.parametrize("path", sorted(SCRIPTS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_script_in_the_repo_loads(path: Path) -> None:
    script = load_script(path)
    assert script.turns
    assert script.expect.status is not None


def test_json_scripts_load_the_same(tmp_path: Path) -> None:
    data = {
        "prompt": "find x",
        "tools": {"search": {"returns": {"hits": ["a"]}}},
        "turns": [{"tool_call": "search", "args": {"q": "x"}}, {"text": "Found one."}],
    }
    path = tmp_path / "find.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_script(path) == parse_script(data, source=str(path))


# -- stubs -----------------------------------------------------------------------------------


def call(name: str, call_id: str = "c1", **args: Any) -> ToolCall:
    return ToolCall.from_args(id=call_id, name=name, arguments=args)


def test_stub_results_run_per_call_and_the_last_repeats() -> None:
    script = load_script(SCRIPTS / "failing_tool_recovery.yaml")
    tools = {t.name: t for t in script.tools()}
    policy = tools["get_refund_policy"]
    first = policy.run_sync(call("get_refund_policy", sku="MUG-01"))
    assert first.is_error
    assert first.content == "get_refund_policy raised ToolStubError: policy service unavailable"
    second = policy.run_sync(call("get_refund_policy", "c2", sku="MUG-01"))
    third = policy.run_sync(call("get_refund_policy", "c3", sku="X"))
    assert (second.is_error, second.content) == (False, '{"eligible": true, "window_days": 30}')
    assert third.content == second.content
    assert policy.calls == [{"sku": "MUG-01"}, {"sku": "MUG-01"}, {"sku": "X"}]
    assert tools["get_order"].calls == []


async def test_stubs_run_async_too() -> None:
    (tool,) = parse_script(
        {"prompt": "p", "tools": {"search": {"returns": "plain text"}}, "turns": [{"text": "x"}]}
    ).tools()
    result = await tool.run_async(call("search", q="x"))
    assert (result.content, result.is_error, result.call_id) == ("plain text", False, "c1")
    assert tool.calls == [{"q": "x"}]


def test_a_raising_stub_raises_tool_stub_error() -> None:
    (tool,) = parse_script(
        {"prompt": "p", "tools": {"pay": {"raises": "card declined"}}, "turns": [{"text": "x"}]}
    ).tools()
    with pytest.raises(ToolStubError, match="card declined") as info:
        tool.function(amount=3)
    assert isinstance(info.value, ToolError)


def test_stub_tools_are_fresh_each_time_and_keep_their_flags() -> None:
    script = load_script(SCRIPTS / "refund.yaml")
    first, second = script.tools(), script.tools()
    first[0].run_sync(call("get_order", order_id="55219"))
    assert len(first[0].calls) == 1
    assert second[0].calls == []
    refund = second[2]
    assert isinstance(refund, StubTool)
    assert refund.name == "start_refund"
    assert refund.side_effect
    assert refund.validator is None
    assert refund.spec.parameters == {"type": "object", "additionalProperties": True}
    assert not refund.is_async


# -- errors name the file and the field ------------------------------------------------------

BASE: dict[str, Any] = {"prompt": "p", "tools": {"search": {"returns": []}}}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"prompt": "  ", "turns": [{"text": "x"}]}, "s.yaml: prompt: is empty"),
        (
            {"prompt": 3, "turns": [{"text": "x"}]},
            "s.yaml: prompt: expected a string, got a number",
        ),
        ({"prompt": "p"}, "s.yaml: turns: missing"),
        ({"prompt": "p", "turns": []}, "s.yaml: turns: expected a non-empty list"),
        ({**BASE, "turns": [{"text": "x"}], "model": "x"}, "s.yaml: model: unknown key 'model'"),
        (
            {**BASE, "max_steps": 0, "turns": [{"text": "x"}]},
            "s.yaml: max_steps: expected an integer >= 1",
        ),
        (
            {**BASE, "max_steps": True, "turns": [{"text": "x"}]},
            "s.yaml: max_steps: expected an integer, got a boolean",
        ),
        (
            {
                **BASE,
                "turns": [
                    {"text": "x"},
                    {"text": "y"},
                    {"text": "z"},
                    {"text": "a", "ending": "done"},
                ],
            },
            "s.yaml: turns[3].ending: unknown ending 'done'; expected one of: complete, tool_use,",
        ),
        (
            {**BASE, "turns": [{"txt": "x"}]},
            "s.yaml: turns[0].txt: unknown key 'txt'; expected one of: text,",
        ),
        (
            {**BASE, "turns": [{"text": 5}]},
            "s.yaml: turns[0].text: expected a string, got a number (5)",
        ),
        ({**BASE, "turns": [{}]}, "s.yaml: turns[0]: an empty turn"),
        (
            {**BASE, "turns": ["hello"]},
            "s.yaml: turns[0]: expected a mapping, got a string ('hello')",
        ),
        (
            {**BASE, "turns": [{"tool_call": ""}]},
            "s.yaml: turns[0].tool_call: is empty; name the tool called",
        ),
        (
            {**BASE, "turns": [{"tool_calls": [{"args": {}}]}]},
            "s.yaml: turns[0].tool_calls[0].tool: missing",
        ),
        (
            {**BASE, "turns": [{"tool_calls": [{"tool": "search", "argz": {}}]}]},
            "s.yaml: turns[0].tool_calls[0].argz: unknown key",
        ),
        (
            {**BASE, "turns": [{"tool_call": "search", "args": [1]}]},
            "s.yaml: turns[0].args: expected a mapping, got a list",
        ),
        (
            {**BASE, "turns": [{"tool_call": "search", "args": {}, "args_raw": "{}"}]},
            "s.yaml: turns[0]: give args or args_raw",
        ),
        (
            {**BASE, "turns": [{"text": "x", "args": {}}]},
            "s.yaml: turns[0].args: needs a tool_call",
        ),
        (
            {**BASE, "turns": [{"tool_call": "search", "tool_calls": []}]},
            "s.yaml: turns[0]: give tool_call or tool_calls",
        ),
        (
            {
                **BASE,
                "turns": [{"tool_call": "search", "id": "a"}, {"tool_call": "search", "id": "a"}],
            },
            "s.yaml: turns[1].id: duplicate id 'a' (see turns[0].id)",
        ),
        (
            {**BASE, "turns": [{"http_error": 529, "text": "x"}]},
            "s.yaml: turns[0].text: cannot be combined with http_error",
        ),
        (
            {**BASE, "turns": [{"http_error": 200}]},
            "s.yaml: turns[0].http_error: expected an integer >= 400",
        ),
        (
            {**BASE, "turns": [{"http_error": "529"}]},
            "s.yaml: turns[0].http_error: expected an integer, got a string",
        ),
        (
            {**BASE, "turns": [{"http_error": 429, "retry_after": "soon"}]},
            "s.yaml: turns[0].retry_after: expected a number",
        ),
        (
            {**BASE, "turns": [{"text": "x", "retry_after": 1}]},
            "s.yaml: turns[0].retry_after: only applies to an http_error turn",
        ),
        (
            {**BASE, "turns": [{"text": "x", "stop_details": "cyber"}]},
            "s.yaml: turns[0].stop_details: only applies to a refused or a malformed_tool_call "
            "turn",
        ),
        (
            {**BASE, "turns": [{"text": "x", "usage": {"tokens": 3}}]},
            "s.yaml: turns[0].usage.tokens: unknown key",
        ),
        (
            {**BASE, "turns": [{"text": "x", "usage": {"input_tokens": -1}}]},
            "s.yaml: turns[0].usage.input_tokens: expected an integer >= 0",
        ),
        (
            {"prompt": "p", "tools": {"search": {}}, "turns": [{"text": "x"}]},
            "s.yaml: tools.search: missing behaviour",
        ),
        (
            {"prompt": "p", "tools": {"search": None}, "turns": [{"text": "x"}]},
            "s.yaml: tools.search: expected a mapping, got null",
        ),
        (
            {"prompt": "p", "tools": ["search"], "turns": [{"text": "x"}]},
            "s.yaml: tools: expected a mapping of tool names",
        ),
        (
            {
                "prompt": "p",
                "tools": {"s": {"returns": 1, "raises": "x"}},
                "turns": [{"text": "x"}],
            },
            "s.yaml: tools.s: give one of returns, raises, results; got returns, raises",
        ),
        (
            {
                "prompt": "p",
                "tools": {"s": {"returns": 1, "sideeffect": True}},
                "turns": [{"text": "x"}],
            },
            "s.yaml: tools.s.sideeffect: unknown key",
        ),
        (
            {"prompt": "p", "tools": {"s": {"results": []}}, "turns": [{"text": "x"}]},
            "s.yaml: tools.s.results: expected a non-empty list",
        ),
        (
            {
                "prompt": "p",
                "tools": {"s": {"results": [{"returns": 1}, {}]}},
                "turns": [{"text": "x"}],
            },
            "s.yaml: tools.s.results[1]: give exactly one of returns, raises",
        ),
        (
            {"prompt": "p", "tools": {"s": {"raises": 3}}, "turns": [{"text": "x"}]},
            "s.yaml: tools.s.raises: expected a string",
        ),
        (
            {
                "prompt": "p",
                "tools": {"s": {"returns": 1, "side_effect": "yes"}},
                "turns": [{"text": "x"}],
            },
            "s.yaml: tools.s.side_effect: expected true or false",
        ),
        (
            {**BASE, "finish_tool": {"schema": {"type": "objekt"}}, "turns": [{"text": "x"}]},
            "s.yaml: finish_tool.schema: not a valid JSON Schema",
        ),
        (
            {**BASE, "finish_tool": {"name": "search"}, "turns": [{"text": "x"}]},
            "s.yaml: finish_tool.name: 'search' is also a stubbed tool",
        ),
        (
            {**BASE, "finish_tool": {"nam": "x"}, "turns": [{"text": "x"}]},
            "s.yaml: finish_tool.nam: unknown key",
        ),
        (
            {**BASE, "turns": [{"text": "x"}], "expect": {"status": "done"}},
            "s.yaml: expect.status: unknown status 'done'; expected one of: complete,",
        ),
        (
            {**BASE, "turns": [{"text": "x"}], "expect": {"tool_calls": {"serch": 1}}},
            "s.yaml: expect.tool_calls.serch: unknown tool 'serch': no turn calls it and no "
            "stub defines it; known tools: search",
        ),
        (
            {**BASE, "turns": [{"text": "x"}], "expect": {"model_calls": "2"}},
            "s.yaml: expect.model_calls: expected an integer",
        ),
        (
            {**BASE, "turns": [{"text": "x"}], "expect": {"output": [1]}},
            "s.yaml: expect.output: expected a mapping",
        ),
        (
            {**BASE, "turns": [{"text": "x"}], "expect": {"steps": 1}},
            "s.yaml: expect.steps: unknown key",
        ),
        ("just a string", "s.yaml: expected a mapping, got a string"),
        (
            {**BASE, "turns": [{"http_error": 600}]},
            "s.yaml: turns[0].http_error: expected an integer <= 599, got 600",
        ),
        (
            {**BASE, "turns": [{"text": None}]},
            "s.yaml: turns[0].text: expected a string, got null",
        ),
        (
            {**BASE, "turns": [{"http_error": 429, "retry_after": float("inf")}]},
            "s.yaml: turns[0].retry_after: expected a finite number, got a number (inf)",
        ),
        (
            {**BASE, "tools": {"": {"returns": 1}}, "turns": [{"text": "x"}]},
            "s.yaml: tools: a tool name must be a non-empty string, got a string ('')",
        ),
        (
            {**BASE, "turns": [{"text": "x"}], "finish_tool": None},
            "s.yaml: finish_tool: expected a mapping, got null",
        ),
    ],
)
def test_errors_name_the_file_and_the_field(data: Any, message: str) -> None:
    with pytest.raises(ScriptError) as info:
        parse_script(data, source="s.yaml")
    assert str(info.value).startswith(message), str(info.value)


def test_a_turn_may_call_any_tool_name_stubbed_or_not() -> None:
    script = parse_script(
        {
            "turns": [
                {"tool_call": "Bash", "args": {"command": "ls"}},
                {"tool_calls": [{"tool": "search"}, {"tool": "write_file"}]},
                {"text": "done"},
            ],
            "expect": {"tool_calls": {"write_file": 1, "never_called": 0}},
        }
    )
    assert script.prompt is None and script.stubs == {}
    assert script.called == ("Bash", "search", "write_file")
    assert [c.name for c in script.turns[1].tool_calls] == ["search", "write_file"]
    assert script.expect.tool_calls == {"write_file": 1, "never_called": 0}


def test_a_replay_needs_the_prompt_a_run_takes_from_its_task() -> None:
    script = parse_script({"turns": [{"text": "x"}]}, source="s.yaml")
    with pytest.raises(ScriptError) as info:
        script.require_prompt("a replay")
    assert str(info.value) == (
        "s.yaml: prompt: missing; a replay needs the user's prompt (only `donegate run` "
        "takes the task's)"
    )
    assert parse_script({"prompt": "p", "turns": [{"text": "x"}]}).require_prompt("x") == "p"


def test_for_a_task_the_prompts_must_match_and_shadowed_stubs_are_warned() -> None:
    data = {"tools": {"write_file": {"returns": "stub"}, "lookup": {"returns": 1}},
            "turns": [{"text": "x"}]}  # fmt: skip
    script = parse_script(data, source="s.yaml")
    warnings = check_for_task(script, prompt="Do it.", tools=["write_file", "read_file"])
    assert warnings == [
        "s.yaml: tools.write_file: stub ignored: the task's own 'write_file' tool runs"
    ]
    same = parse_script({**data, "prompt": "Do it.\n"})
    assert len(check_for_task(same, prompt="Do it.", tools=[])) == 0
    other = parse_script({**data, "prompt": "Do something else."}, source="s.yaml")
    with pytest.raises(ScriptError) as info:
        check_for_task(other, prompt="Do it.", tools=[])
    assert str(info.value) == (
        "s.yaml: prompt: 'Do something else.' differs from the task's prompt 'Do it.'; "
        "leave it out (the task's is used) or make them match"
    )


def test_error_fields_are_kept_on_the_exception() -> None:
    with pytest.raises(ScriptError) as info:
        parse_script({"prompt": "p", "turns": [{"text": "x", "ending": "done"}]}, source="r.yaml")
    assert (info.value.source, info.value.field) == ("r.yaml", "turns[0].ending")


def test_without_a_source_the_field_still_leads() -> None:
    with pytest.raises(ScriptError, match=r"^turns\[0\]\.ending: unknown ending 'done'"):
        parse_script({"prompt": "p", "turns": [{"text": "x", "ending": "done"}]})


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", "prompt: p\nturns:\n  - {text: [unclosed\n")
    with pytest.raises(ScriptError, match=r"bad\.yaml: line \d+: not valid YAML: "):
        load_script(path)


def test_a_duplicate_yaml_key_is_an_error_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.yaml", "prompt: p\nturns:\n  - text: a\n    text: b\n")
    with pytest.raises(ScriptError) as info:
        load_script(path)
    assert str(info.value) == f"{path}: line 4: not valid YAML: duplicate key 'text'"


def test_bad_json_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", '{"prompt": "p",\n "turns": [}\n')
    with pytest.raises(ScriptError, match=r"bad\.json: line 2: not valid JSON: "):
        load_script(path)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match=r"nope\.yaml: cannot read the script"):
        load_script(tmp_path / "nope.yaml")


def test_a_yaml_field_error_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "refund.yaml", "prompt: p\nturns:\n  - {text: x, ending: done}\n")
    with pytest.raises(ScriptError) as info:
        load_script(path)
    assert str(info.value).startswith(f"{path}: turns[0].ending: unknown ending 'done'")


# -- properties ------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 600) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
turn_keys = st.sampled_from(
    ["text", "thinking", "refusal", "tool_call", "args", "args_raw", "id", "tool_calls",
     "ending", "stop_details", "usage", "http_error", "retry_after", "message"]
)  # fmt: skip
turn_values = st.one_of(
    json_values,
    st.sampled_from(["search", "complete", "truncated", "refused", '{"q": 1', "c1", 529, 429]),
)


@settings(deadline=None)
@given(st.lists(st.dictionaries(turn_keys, turn_values, max_size=4), min_size=1, max_size=4))
def test_any_turn_data_parses_or_raises_a_script_error(raw: list[dict[str, Any]]) -> None:
    try:
        script = parse_script({"prompt": "p", "tools": STUBS, "turns": raw}, source="s.yaml")
    except ScriptError as exc:
        assert str(exc).startswith("s.yaml: ")
        return
    ids = [c.id for t in script.turns for c in t.tool_calls]
    assert len(ids) == len(set(ids))
    for turn in script.turns:
        assert turn.message.role == "assistant"
        assert (turn.error is not None) == (turn.raw_reason is not None)


@settings(deadline=None)
@given(json_values)
def test_any_top_level_data_parses_or_raises_a_script_error(data: Any) -> None:
    with contextlib.suppress(ScriptError):
        parse_script(data, source="s.yaml")
