"""A stand-in for an agent CLI's headless mode that plays a Stop-hook loop (used by exec tests).

Installed by the tests as ``claude`` (or ``codex``, ``gemini``) on PATH. It reads the hooks the
way the real CLI would (Claude: ``--settings FILE``; Gemini: ``$GEMINI_CLI_HOME/.gemini/
settings.json``), then plays the turns of ``$FAKE_AGENT_TURNS`` (or of the file
``$FAKE_AGENT_SCRIPT``; JSON: a list of ``{"run": [ARGV], "write": {PATH: TEXT}, "delete": [PATH],
"say": TEXT, "todos": [...], "background": [...], "exit": CODE, "give_up": true}``): each turn
does its writes, then stops; the stop runs every
Stop hook with the CLI's payload on stdin, and a block moves on to the next turn (the last one
repeats), as does a stop let through while ``background`` work runs. A ``run`` turn first runs
a program as the agent's tool would, its output going to stderr. It ends when no hook
blocks, at a ``give_up`` turn (as Claude Code does after 8
blocks), or after 30 stops, printing Claude's ``--output-format json`` result. Every hook stdin
and answer is appended to ``$FAKE_AGENT_LOG``, or written to stderr as a ``FAKE-AGENT-LOG {json}``
line when it is ``-`` (in the sandbox, where no file outside the workdir can be written).
"""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

NAME = Path(sys.argv[0]).name


def hooks_of(args):
    if NAME == "gemini":
        home = Path(os.environ["GEMINI_CLI_HOME"])
        data = json.loads((home / ".gemini" / "settings.json").read_text())
    else:
        data = json.loads(Path(args[args.index("--settings") + 1]).read_text())
    return data.get("hooks", {})


def run_hooks(hooks, event, payload, log):
    answers = []
    for group in hooks.get(event, []):
        for hook in group["hooks"]:
            proc = subprocess.run(
                hook["command"],
                shell=True,
                input=json.dumps(payload),
                capture_output=True,
                text=True,
                timeout=hook["timeout"],
            )
            answer = json.loads(proc.stdout) if proc.stdout.strip() else None
            record = {
                "event": event,
                "stdin": payload,
                "answer": answer,
                "code": proc.returncode,
                "stderr": proc.stderr,
            }
            if log == "-":
                print("FAKE-AGENT-LOG " + json.dumps(record), file=sys.stderr, flush=True)
            else:
                with open(log, "a") as f:
                    f.write(json.dumps(record) + "\n")
            answers.append(answer)
    return answers


def main():
    args = sys.argv[1:]
    if args[:1] == ["app-server"]:
        return 1  # this stand-in speaks no JSON-RPC: Codex's trust cannot be had from it
    if args == ["--version"]:
        print("2.1.197 (Claude Code)" if NAME == "claude" else "0.61.0")
        return 0
    turns = json.loads(
        os.environ.get("FAKE_AGENT_TURNS") or Path(os.environ["FAKE_AGENT_SCRIPT"]).read_text()
    )
    log = os.environ.get("FAKE_AGENT_LOG", os.devnull)
    hooks = hooks_of(args)
    session = str(uuid.uuid4())
    home = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.environ["HOME"], ".claude")
    transcript = Path(home) / "projects" / f"{session}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    base = {"session_id": session, "transcript_path": str(transcript), "cwd": os.getcwd()}
    run_hooks(hooks, "SessionStart", {**base, "hook_event_name": "SessionStart"}, log)
    stop = "AfterAgent" if NAME == "gemini" else "Stop"
    active = False
    said = ""
    for n in range(30):
        turn = turns[min(n, len(turns) - 1)]
        if "run" in turn:
            done = subprocess.run(turn["run"], capture_output=True, text=True, timeout=60)
            sys.stderr.write(done.stdout + done.stderr)
        for path, text in turn.get("write", {}).items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text)
        for path in turn.get("delete", []):
            Path(path).unlink(missing_ok=True)
        if "todos" in turn:
            with open(transcript, "a") as f:
                f.write(
                    json.dumps({"type": "user", "toolUseResult": {"newTodos": turn["todos"]}})
                    + "\n"
                )
        if "exit" in turn:
            print(turn.get("stderr", "crashed"), file=sys.stderr)
            return turn["exit"]
        said = turn.get("say", "")
        print(f"turn {n}: {said}", file=sys.stderr)
        payload = {
            **base,
            "hook_event_name": stop,
            "stop_hook_active": active,
            "background_tasks": turn.get("background", []),
        }
        if NAME == "gemini":
            payload["prompt_response"] = said
        else:
            payload["last_assistant_message"] = said
        answers = run_hooks(hooks, stop, payload, log)
        if not any(a and a.get("decision") in ("block", "deny") for a in answers):
            if turn.get("background"):
                continue  # the CLI wakes the agent again when its background work ends
            break
        if turn.get("give_up"):
            break
        active = True
    print(
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "result": said,
                "session_id": session,
            }
        )
    )
    return 0


sys.exit(main())
