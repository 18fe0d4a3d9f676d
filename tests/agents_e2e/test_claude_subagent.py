"""Claude Code with a background subagent: the stop while it runs spends no continuation.

The main session writes half the files, starts a subagent in the background for the rest
(``run_in_background``; 2.1.332 runs subagents in the background anyway) and ends its turn.
Claude Code runs the Stop hooks then, with ``background_tasks`` listing the subagent as
running, and wakes the session again when the subagent ends. A gate that blocked that first
stop would spend a continuation on work already under way (and its reason would reach the
model: the script has no turn for it). The subagent's requests carry their own prompt, so the
emulator answers them from their own script however the two sessions interleave.

A recorder Stop hook in the project's ``.claude/settings.json`` (there before the gate is
installed: install merges, exec adds its own for the run) logs what Claude Code sent, so the
test knows the stop really came while the subagent ran.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.agents_e2e._agents import CLAUDE, CLAUDE_NEW, FILES, Cli, Emulate, Mode, Session

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

RECORD = "import sys; open(sys.argv[1], 'a').write(sys.stdin.read().strip() + '\\n')"


def recorder(session: Session) -> Path:
    """A Stop hook appending Claude Code's hook input to a log; returns the log's path.

    The log is in the project's ``.claude`` folder: under ``exec`` with the sandbox the hook runs
    inside it, where only the workdir (and the CLI's own folders) can be written."""
    (session.work / ".claude").mkdir()
    log = session.work / ".claude" / "stop-stdin.jsonl"
    command = shlex.join([sys.executable, "-c", RECORD, str(log)])
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}
    (session.work / ".claude" / "settings.json").write_text(json.dumps(settings))
    return log


@pytest.mark.parametrize("mode", ["exec", "install"])
@pytest.mark.parametrize("cli", [CLAUDE, CLAUDE_NEW], ids=[CLAUDE.label, CLAUDE_NEW.label])
def test_a_stop_while_a_background_subagent_runs_spends_no_continuation(
    cli: Cli, mode: Mode, tmp_path: Path
) -> None:
    session = Session(cli, tmp_path)
    log = recorder(session)
    with Emulate(*session.scripts("subagent_main", "subagent_worker")) as emu:
        run = session.run(emu, mode, max_continuations=2)
        run.assert_exhausted(emu)
        served = [(r["conversation"], r["turn"]) for r in run.requests]

    # Both conversations played out, each in its own order, and no reason reached the model.
    assert [t for c, t in served if c == "subagent_main"] == [0, 1, 2, 3], served
    assert [t for c, t in served if c == "subagent_worker"] == [0, 1], served
    assert run.gate_messages() == [], run.explain()
    assert sorted(p.name for p in session.work.iterdir() if p.is_file()) == sorted(FILES)

    # Claude Code stopped twice: first with the subagent running, then after it ended.
    stops = [json.loads(line) for line in log.read_text().splitlines()]
    running = [[t["status"] for t in s["background_tasks"]] for s in stops]
    assert running == [["running"], []], stops
    assert [s["stop_hook_active"] for s in stops] == [False, False]  # never after a block

    assert run.reports() == []
    assert run.code == 0, run.explain()
    if mode == "exec":
        assert run.summary is not None
        assert (run.summary["status"], run.summary["continuations"]) == ("done", 0)
        assert run.summary["certificate"] and Path(run.summary["certificate"]).is_file()
