"""Tasks for the review UI's tests, run for real through the worker with function models.

`report_model` stands for a model that follows instructions: it writes ``report.txt`` with the
built-in ``write_file`` and claims it is done. Unless a reviewer's instructions (appended to the
prompt on requeue) tell it to write READY, it writes PENDING, the harness's check fails, and after
one continuation the task escalates; requeued with those instructions, it passes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from donegate.messages import Ending, Message, TextPart, ToolCall, Turn
from donegate.models.base import Model, ModelRequest
from donegate.models.function import FunctionModel
from donegate.store.sql import SqlStore
from donegate.worker import Worker, submit
from donegate.worker.tasks import INSTRUCTIONS_HEADER

DATA = Path(__file__).parent / "data"
CHECK = [sys.executable, str(DATA / "check_report.py")]
READY_HINT = "Write exactly READY into report.txt."
"""The instructions a reviewer gives on requeue in the tests."""
XSS_CLAIM = '<script>window.__donegate_pwned = 1; document.title = "pwned"</script> All done.'
"""A claim carrying markup: the page must show it as text."""


def _said(request: ModelRequest) -> int:
    return sum(1 for m in request.messages if m.role == "assistant")


def _prompt(request: ModelRequest) -> str:
    return "\n".join(m.text for m in request.messages if m.role == "user")


def _tool(name: str, args: dict[str, Any]) -> Turn:
    call = ToolCall.from_args(id="c1", name=name, arguments=args)
    return Turn(message=Message(role="assistant", parts=(call,)), ending=Ending.TOOL_USE)


def _text(text: str, *, raw_reason: str = "end_turn") -> Turn:
    from donegate.messages import Usage

    return Turn(
        message=Message(role="assistant", parts=(TextPart(text=text),)),
        ending=Ending.COMPLETE,
        raw_reason=raw_reason,
        usage=Usage(input_tokens=120, output_tokens=12),
    )


def report_model(request: ModelRequest) -> Turn:
    """Write report.txt (READY only when the instructions say so), then claim it is done."""
    if _said(request) == 0:
        prompt = _prompt(request)
        ready = INSTRUCTIONS_HEADER in prompt and "READY" in prompt.split(INSTRUCTIONS_HEADER)[-1]
        return _tool(
            "write_file", {"path": "report.txt", "content": "READY" if ready else "PENDING"}
        )
    return _text("Done: report.txt is ready.")


def ready_model(request: ModelRequest) -> Turn:
    """Writes READY and claims it: done on the first run."""
    if _said(request) == 0:
        return _tool("write_file", {"path": "report.txt", "content": "READY"})
    return _text("report.txt says READY.")


def truncated_model(request: ModelRequest) -> Turn:
    """Every answer is cut at the output limit: the run fails truncated (a leading indicator)."""
    return Turn(
        message=Message(role="assistant", parts=(TextPart(text="The report is nearly"),)),
        ending=Ending.TRUNCATED,
        raw_reason="max_tokens",
    )


def xss_model(request: ModelRequest) -> Turn:
    """Claims completion at once, in markup."""
    return _text(XSS_CLAIM)


MODELS = {
    "function:report": report_model,
    "function:ready": ready_model,
    "function:truncated": truncated_model,
    "function:xss": xss_model,
}


def resolver(name: str, what: str) -> Model:
    """The worker's model resolver for these tasks."""
    return FunctionModel(MODELS[name], name=name)


def report_task(task_id: str, workdir: Path, model: str = "function:report") -> dict[str, Any]:
    """Escalates (its check fails twice) unless requeued with `READY_HINT`."""
    workdir.mkdir(parents=True, exist_ok=True)
    return {
        "id": task_id,
        "type": "report",
        "prompt": "Write the status report to report.txt.",
        "model": model,
        "tools": ["write_file"],
        "workdir": str(workdir),
        "checks": [{"name": "report is ready", "run": CHECK}],
        "max_continuations": 1,
    }


def xss_task(task_id: str, workdir: Path) -> dict[str, Any]:
    """Escalates at once: a markup claim, and a file that is never written."""
    workdir.mkdir(parents=True, exist_ok=True)
    return {
        "id": task_id,
        "type": "inject",
        "prompt": "Say you are done.",
        "model": "function:xss",
        "tools": ["write_file"],
        "workdir": str(workdir),
        "checks": [{"file_exists": "never-there.txt"}],
        "max_continuations": 0,
    }


def work(store: SqlStore, home: Path) -> None:
    """Run every runnable task to its end with a real worker."""
    Worker(store, model_resolver=resolver, output_dir=home, poll_s=0.05).run(until_idle=True)


def fill(store: SqlStore, root: Path) -> dict[str, str]:
    """Submit and run the tests' tasks, oldest first; their ids by role."""
    ids = {
        "requeue": "report-requeue",
        "resolve": "report-resolve",
        "xss": "inject-xss",
        "token": "report-token",
        "done": "report-done",
        "review": "report-review",
    }
    for role in ("requeue", "resolve"):
        submit(report_task(ids[role], root / f"w-{role}"), store)
    submit(xss_task(ids["xss"], root / "w-xss"), store)
    submit(report_task(ids["token"], root / "w-token"), store)
    submit(report_task(ids["done"], root / "w-done", "function:ready"), store)
    review = report_task(ids["review"], root / "w-review", "function:ready")
    submit({**review, "closure": "human"}, store)  # passes every gate, then waits for a person
    for n in range(3):
        submit(report_task(f"report-cut-{n}", root / f"w-cut-{n}", "function:truncated"), store)
    work(store, root / "home")
    return ids
