"""``donegate emulate`` and ``donegate record`` as processes: a URL on stderr, JSON on exit."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anthropic
import httpx2
import pytest

import donegate
from donegate.testing import Emulator, ScriptedModel, load_script

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
# Each test starts `donegate emulate`/`record` (or the entry point) as a process of its own.
pytestmark = pytest.mark.slow


@contextmanager
def serving(*args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Start ``donegate ARGS --port 0``; yield its base URL and the process (stopped by SIGINT)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "donegate", *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"http://[\d.]+:\d+", line)
    if found is None:
        proc.kill()
        pytest.fail(f"no URL announced: {line}{proc.stderr.read()}")
    try:
        yield found.group(0), proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_emulate_serves_scripts_and_prints_what_was_served() -> None:
    with serving(
        "emulate", str(SCRIPTS / "tool_then_text.yaml"), str(SCRIPTS / "refused.yaml")
    ) as (
        url,
        proc,
    ):
        client = anthropic.Anthropic(api_key="k", base_url=url, max_retries=0)
        ask = [{"role": "user", "content": "find x"}]
        m = client.messages.create(model="claude-sonnet-4-6", max_tokens=9, messages=ask)  # type: ignore[arg-type]
        assert m.stop_reason == "tool_use"
        status = httpx2.get(url + "/_donegate/status").json()
        assert [c["served"] for c in status["conversations"]] == [1, 0]
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    summary = json.loads(out)
    assert summary["requests"] == 1
    assert summary["unused_turns"] == 2
    assert summary["conversations"] == [
        {"name": "tool_then_text", "turns": 2, "served": 1},
        {"name": "refused", "turns": 1, "served": 0},
    ]


def test_record_writes_a_script_that_replays(tmp_path: Path) -> None:
    from donegate.models.sdk import AnthropicModel

    script = load_script(SCRIPTS / "refund.yaml")
    out = tmp_path / "recorded.yaml"
    with Emulator(script) as real:
        with serving("record", "--upstream", real.base_url, "-o", str(out)) as (url, proc):
            client = anthropic.Anthropic(api_key="sk-ant-api03-plantedsecret", base_url=url)
            result = donegate.run(
                script.prompt,
                model=AnthropicModel(client, "claude-sonnet-4-6"),
                tools=script.tools(),
                system=script.system,
            )
            assert result.complete
        _, err = proc.communicate()
    assert proc.returncode == 0, err
    assert "recorded 4 exchange(s)" in err
    recorded = load_script(out)
    player = ScriptedModel(recorded)
    again = donegate.run(recorded.prompt, model=player, tools=recorded.tools(),
                         system=recorded.system)  # fmt: skip
    player.assert_exhausted()
    assert again.text == result.text
    assert [r.call.arguments for r in again.tool_calls] == [
        r.call.arguments for r in result.tool_calls
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give at least one script"),
        (("--record", "x.yaml"), "--record needs --upstream"),
        (("s.yaml", "--upstream", "http://127.0.0.1:9"), "not both"),
        (("missing.yaml",), "cannot read the script"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], message: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "donegate", "emulate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert message in proc.stderr
