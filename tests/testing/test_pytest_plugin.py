"""The pytest plugin, tested the way users meet it: in a fresh pytest run (``pytester``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture(autouse=True)
def quiet_ini(pytester: pytest.Pytester) -> None:
    """The inner runs get the settings the outer one has (no pytest-asyncio warning)."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester folder holding the refund script next to the test files."""
    shutil.copy(SCRIPTS / "refund.yaml", pytester.path / "refund.yaml")
    shutil.copy(SCRIPTS / "tool_then_text.yaml", pytester.path / "tool_then_text.yaml")
    return pytester


def test_the_options_are_exposed(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--donegate-record*", "*--donegate-live*"])


def test_every_fixture_has_a_docstring(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    out = pytester.runpytest("--fixtures").stdout.str()
    for name, words in {
        "scripted_model": "Factory for strict",
        "load_donegate_script": "Load a script file",
        "donegate_emulator": "provider-emulating HTTP server",
        "donegate_record": "--donegate-record",
    }.items():
        assert name in out
        assert words in out.split(name, 1)[1][:400], name


def test_the_fixtures_work(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import donegate, openai
        from donegate.testing import assert_results_match_calls, assert_tool_order

        def test_scripted(scripted_model, load_donegate_script):
            script = load_donegate_script("refund.yaml")
            model = scripted_model("refund.yaml")
            run = donegate.run(script.prompt, model=model, tools=script.tools())
            assert run.complete
            assert_results_match_calls(run)

        def test_emulated(donegate_emulator):
            donegate_emulator.load("tool_then_text.yaml")
            client = openai.OpenAI(api_key="k", base_url=donegate_emulator.base_url + "/v1")
            ask = [{"role": "user", "content": "find x"}]
            first = client.chat.completions.create(model="m", messages=ask).choices[0].message
            assert first.tool_calls[0].function.name == "search"
            ask += [first.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": "c1", "content": "{}"}]
            client.chat.completions.create(model="m", messages=ask)
            assert_results_match_calls(donegate_emulator)
            assert_tool_order(donegate_emulator, ["search"])

        def test_record_flag_is_off(donegate_record):
            assert donegate_record is False
        """
    )
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_unused_turns_fail_at_teardown(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import openai

        def test_scripted_model_left_unused(scripted_model):
            scripted_model("refund.yaml")

        def test_emulator_left_unused(donegate_emulator):
            donegate_emulator.load("refund.yaml")

        def test_emulator_not_strict(donegate_emulator):
            donegate_emulator.load("refund.yaml")
            donegate_emulator.strict = False

        def test_a_failing_test_reports_only_its_own_failure(scripted_model):
            scripted_model("refund.yaml")
            assert 1 == 2
        """
    )
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, errors=2, failed=1)
    result.stdout.fnmatch_lines(["*4 unused turns: model called 0 times but script has 4*"])


def test_live_tests_are_skipped_unless_asked_for(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.donegate_live
        def test_calls_a_real_provider():
            pass

        def test_offline():
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*pass --donegate-live to run it*"])
    pytester.runpytest("-p", "no:cacheprovider", "--donegate-live").assert_outcomes(passed=2)


def test_the_record_flag_reaches_the_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_flag(donegate_record):
            assert donegate_record is True
        """
    )
    pytester.runpytest("-p", "no:cacheprovider", "--donegate-record").assert_outcomes(passed=1)


def test_loading_the_plugin_imports_no_sdk_or_server() -> None:
    code = (
        "import sys, donegate.testing.pytest_plugin, donegate.testing\n"
        "heavy = {'openai', 'anthropic', 'google', 'httpx2', 'starlette', 'uvicorn', 'yaml'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
