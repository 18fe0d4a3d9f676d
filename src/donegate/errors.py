"""Every exception donegate raises, in one tree.

```
DonegateError                 base of everything below
├── UserError                 misuse: bad arguments, bad files, unknown names (CLI exit 2)
│   ├── LocatedError          a bad file or value, named with its place: ``source: field: ...``
│   │   ├── FileError         a file that cannot be read as it is (size, UTF-8, syntax, depth)
│   │   ├── ScriptError       a script file or script turn is invalid (names file and field)
│   │   └── TaskSpecError     a task file or task dict is invalid (names file and field)
│   ├── UnsupportedTurn       a wire format cannot express a scripted turn
│   ├── MissingExtra          an optional dependency is not installed (names the extra)
│   ├── NotAReviewer          a review action without a secret of a reviewer the store knows
│   ├── HookInputError        an agent CLI's hook payload is not the documented shape
│   ├── TodoStateError        the agent's todo/goal state exists but cannot be read
│   ├── ProtectError          protected files cannot be digested (too many, a bad pattern)
│   └── RecordingMismatch     a recording's script does not replay to what was recorded
├── WireFormatError           a provider body that is not the documented shape (names the path)
├── ScriptExhausted           a scripted model was called more times than the script has turns
├── UnansweredCalls           a request to a scripted model holds tool calls with no result
├── ToolError                 a tool raised; the loop turns it into an error result
│   └── ToolStubError         a script's stub raised as scripted (``raises: MESSAGE``)
├── EffectDivergence          an idempotency key's recorded call is not the call now asking
├── EffectOutcomeUnknown      a side effect begun by a run that died, of a tool that cannot say
├── CheckEnvironmentError     a check cannot run on this machine (a module, program, driver)
├── StoreError                the store failed under a running process (not a misuse)
│   ├── StoreUnavailable      it stopped answering, and kept not answering for its patience
│   ├── StoreGone             the SQLite file was deleted or replaced (another inode)
│   └── DiskFull              no space left (or a file-size limit) where it writes
├── LeaseLost                 a worker wrote under a lease it no longer holds
└── Escalated                 a framework integration's gate stopped the run for a person
```

Control flow is never signalled by exceptions: the loop returns tagged steps. `Escalated` is the
one outcome raised, because a framework (pydantic-ai, the Agents SDK, LangChain) owns the loop
that `donegate.integrations` plugs into, and an exception is how a hook ends that loop. (The few
exceptions that carry a signal inside one module, such as the worker's ``Halted``, are private to
it and are not part of this tree.) The store's errors are re-exported by `donegate.store`. This
module is the bottom layer: it imports nothing from donegate.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "CheckEnvironmentError",
    "DiskFull",
    "DonegateError",
    "EffectDivergence",
    "EffectOutcomeUnknown",
    "Escalated",
    "FileError",
    "HookInputError",
    "LeaseLost",
    "LocatedError",
    "MissingExtra",
    "NotAReviewer",
    "ProtectError",
    "RecordingMismatch",
    "ScriptError",
    "ScriptExhausted",
    "StoreError",
    "StoreGone",
    "StoreUnavailable",
    "TaskSpecError",
    "TodoStateError",
    "ToolError",
    "ToolStubError",
    "UnansweredCalls",
    "UnsupportedTurn",
    "UserError",
    "WireFormatError",
]


class DonegateError(Exception):
    """Base class of every donegate error."""


class UserError(DonegateError):
    """The caller asked for something that cannot be done as asked."""


class CheckEnvironmentError(DonegateError):
    """A certified check cannot run here: what it needs (a module on its path, a program, a
    database driver) is missing from this machine. Not bad input: ``donegate verify`` exits 4."""


class LocatedError(UserError):
    """Something read from a file or a dict is wrong; the message says where, then what.

    ``source`` (the file) and ``field`` (the place in it) lead the one line, each when known:
    ``refund.yaml: turns[3].ending: unknown ending 'done'; ...``. Its subclasses say which kind
    of input it was; loaders pass the class as the error factory of `donegate._files`.
    """

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        where = ": ".join(p for p in (source, field) if p)
        super().__init__(f"{where}: {message}" if where else message)
        self.message = message
        """What is wrong, without the place."""
        self.source = source
        """The file at fault, when there is one."""
        self.field = field
        """The place in it (``checks[1].file_contains.path``, ``line 4``), when there is one."""


class FileError(LocatedError):
    """A file that cannot be used as it is; the message names the file and the place in it."""


class ScriptError(LocatedError):
    """A script file or one of its turns is invalid.

    The message names the file (when known) and the field, e.g. ``refund.yaml: turns[3].ending``.
    """


class TaskSpecError(LocatedError):
    """A task file or task dict is invalid; the message names the file and the field.

    For example ``task.yaml: checks[1].file_contains.path: field required``.
    """


class UnsupportedTurn(UserError):
    """A wire format cannot express a scripted turn (``paused`` outside Anthropic, ...)."""


class MissingExtra(UserError, ImportError):
    """Optional dependencies are missing; one line names every package and every extra at once.

    For example ``anthropic, httpx2 are not installed: pip install "donegate[anthropic]"``.
    """

    def __init__(self, package: str | Sequence[str], extra: str | Sequence[str]):
        packages = [package] if isinstance(package, str) else list(package)
        extras = [extra] if isinstance(extra, str) else list(dict.fromkeys(extra))
        verb = "is" if len(packages) == 1 else "are"
        hint = f'pip install "donegate[{",".join(extras)}]"'
        super().__init__(f"{', '.join(packages)} {verb} not installed: {hint}")
        self.package = ", ".join(packages)
        self.extra = ",".join(extras)


class NotAReviewer(UserError):
    """Approving, resolving or requeueing needs a reviewer's secret (``donegate reviewers add``):
    none came, or it matches no reviewer the store knows. Nothing was changed."""


class HookInputError(UserError):
    """The hook's stdin is not a payload the CLI documents; the message says what is wrong."""


class TodoStateError(UserError):
    """The agent's todo/goal state exists but cannot be read (it then blocks, like an open item)."""


class ProtectError(UserError):
    """Protected files could not be digested (too many, or a bad pattern); the gate blocks."""


class RecordingMismatch(UserError):
    """A recording whose script does not replay to the recorded conversation; nothing saved."""


class WireFormatError(DonegateError):
    """A provider body does not have the documented shape.

    ``path`` points at the offending field, e.g. ``choices[0].message``.
    """

    def __init__(self, api: str, message: str, *, path: str = "$"):
        super().__init__(f"{api}: {path}: {message}")
        self.api = api
        self.path = path


class ScriptExhausted(DonegateError):
    """A scripted model was asked for more turns than its script holds."""

    def __init__(self, calls: int, turns: int):
        times, s = ("time" if calls == 1 else "times"), ("" if turns == 1 else "s")
        super().__init__(f"model called {calls} {times} but script has {turns} turn{s}")
        self.calls = calls
        self.turns = turns


class UnansweredCalls(DonegateError):
    """A request's history holds tool calls that no tool result answers.

    Every provider rejects such a request (HTTP 400: each call must be answered by its id), so
    the script player does too, rather than letting an agent that drops results pass a test.
    """

    def __init__(self, ids: Sequence[str]):
        shown = ", ".join(repr(i) for i in ids)
        super().__init__(
            f"the request's history has tool calls with no result: {shown} (a provider "
            "rejects this request with 400: every tool call must be answered by its id)"
        )
        self.ids = tuple(ids)


class ToolError(DonegateError):
    """A tool failed; carried into the transcript as an error result."""


class ToolStubError(ToolError):
    """Raised by a stub whose scripted result is ``raises: MESSAGE``."""


class EffectDivergence(DonegateError):
    """An idempotency key was begun or recorded for one call and is now asked for another.

    A run that no longer asks, at step N, what it asked there before would otherwise be
    answered with another call's result, or re-issue another call's in-flight effect under its
    key. The ledger refuses instead; the worker fails the task with this message.
    """

    def __init__(self, key: str, recorded: str, asking: str):
        super().__init__(
            f"effect {key}: the ledger holds {recorded} under this key but the run now asks for "
            f"{asking}; not answered, not run"
        )
        self.key = key
        self.recorded = recorded
        self.asking = asking


class EffectOutcomeUnknown(DonegateError):
    """A side effect was begun under a key by a run that died before recording its outcome, and
    its tool neither honours the key (``idempotent=True``) nor can tell whether it happened
    (``reconcile``, or its reconcile failed).

    Running it again could do it twice; not running it could leave it undone. The worker
    escalates the task with this message and the call instead: a person decides.
    """

    def __init__(self, key: str, call: str, why: str, *, tool: str = "", arguments: object = None):
        super().__init__(f"outcome unknown: {call} under key {key}: {why}; not run again")
        self.key = key
        self.call = call
        self.why = why
        self.tool = tool
        self.arguments = arguments


# -- the store (re-exported by donegate.store and donegate.store.base) ----------------------


class StoreError(DonegateError):
    """The store failed under a running process: not a misuse, and not the task's fault."""


class StoreUnavailable(StoreError):
    """The store stopped answering (refused or dropped connections, a server restarting)."""


class StoreGone(StoreError):
    """The SQLite file the store opened was deleted or replaced by another file (inode).

    Writing on would land in an unlinked file nobody will read, or in a file that is not the
    one the tasks were claimed from; the process must stop using it.
    """


class DiskFull(StoreError):
    """No space left, or a file-size limit hit, where the store (or the worker) writes."""


class LeaseLost(DonegateError):
    """A worker wrote under a lease it no longer holds; the write did not land."""

    def __init__(self, task_id: str, epoch: int) -> None:
        super().__init__(f"task {task_id}: lease epoch {epoch} is no longer held")
        self.task_id = task_id
        self.epoch = epoch


class Escalated(DonegateError):
    """The gate inside a framework's loop stopped the run: a person must look.

    Raised by `donegate.integrations` when the continuations are spent, the model refused, or
    the agent stated a blocker. ``report`` is the escalation report's JSON path (its Markdown
    twin sits beside it with ``.md``); ``reason`` says why in one line.
    """

    def __init__(self, reason: str, *, report: Path):
        super().__init__(f"escalated: {reason} (report: {report})")
        self.reason = reason
        """Why the gate stopped, in one line."""
        self.report = report
        """The escalation report's JSON file."""
