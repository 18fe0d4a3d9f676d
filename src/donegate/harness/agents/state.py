"""Hook state: the block count, each round, the protected-file digests, kept where the agent is not.

A hook is a fresh process at every stop, so what it must remember (how many continuations it
granted, what each round found, the digests of the protected files, whether it escalated) lives
in a file: ``data_dir()/hooks/<task id>/<session>.json``, never under the session's cwd, which
the agent writes. The file is validated on every read (a pydantic model, strict types, no extra
keys, counts consistent with the rounds) and carries an HMAC over its canonical JSON with a key
kept beside it (mode 0600). A record that fails any of this is tampering: it is moved aside as
``*.tampered-N.json`` and every such file counts as a spent continuation, so rewriting the
record again at each stop cannot reset the budget.

When the task cannot be read the hook still counts its blocks, under
``hooks/_unreadable/<digest of task path and cwd>/<session>.json`` with a fallback budget.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from donegate.errors import UserError
from donegate.harness.agents.base import safe_id
from donegate.harness.signing import PublicKey, canonical, sign, signature_problem, signing_key
from donegate.records.status import ItemStatus

__all__ = [
    "CLAIM_CAP",
    "KIND",
    "CheckBrief",
    "HookState",
    "Round",
    "StateStore",
    "TamperedState",
    "TodoRecord",
]

KIND: Literal["donegate.hook-state"] = "donegate.hook-state"
CLAIM_CAP = 4000
"""Characters of a claim kept per round (a claim is evidence, not a transcript)."""
_KEY_FILE = "state.key"
_INDEX_FILE = "sessions.index"
_MAX_INDEX_BYTES = 64 * 1024 * 1024
_MAX_STATE_BYTES = 8 * 1024 * 1024
_COUNTED = ("blocked", "fault")
MAX_ROUNDS = 200
"""Rounds a record keeps: the oldest ones the count does not rest on are dropped first."""
MAX_TODOS = 100
"""Todo items a round keeps."""

RoundOutcome = Literal[
    "blocked", "fault", "passed", "deferred", "escalated", "let_through", "started"
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class CheckBrief(_Strict):
    """A check result as a round keeps it."""

    name: str
    passed: bool
    detail: str


class TodoRecord(_Strict):
    """A todo item as a round keeps it."""

    text: str
    status: ItemStatus = Field(strict=False)
    """Lax: the state file's (and `TodoItem.as_data`'s) plain string parses into the enum."""
    raw_status: str
    source: str


class Round(_Strict):
    """One hook call and what the gate made of it."""

    at: float
    """Unix time of the decision."""
    event: str
    """``hook_event_name`` as the CLI sent it."""
    outcome: RoundOutcome
    """``blocked``/``fault`` spend a continuation; the others do not."""
    stop_hook_active: bool = False
    claim: str | None = None
    """The newest part of the turn's text (capped at `CLAIM_CAP`)."""
    checks: list[CheckBrief] = Field(default_factory=list)
    todos: list[TodoRecord] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    """What stood between the claim and done (the reason sent back, in parts)."""
    error: str | None = None
    """The hook's own failure, for ``fault`` rounds."""
    note: str | None = None
    """Why a stop was let through without spending a continuation (``deferred``)."""
    certificate: str | None = None
    """The certificate a ``passed`` round wrote."""


class HookState(_Strict):
    """Everything one (task, session) pair's hook remembers between stops."""

    kind: Literal["donegate.hook-state"] = KIND
    version: Literal[1] = 1
    agent: str
    task: str
    """The task id (or, for the unreadable-task fallback, the task path)."""
    task_path: str
    session_id: str
    subagent_id: str | None = None
    blocks: int = Field(default=0, ge=0)
    """Continuations spent since the last pass (blocked and fault rounds)."""
    rounds: list[Round] = Field(default_factory=list)
    protected: dict[str, Any] | None = None
    """The protected-file manifest taken at the session's start (`Manifest.as_data`)."""
    last_raw_claim: str | None = None
    """The payload's claim as sent last time (for CLIs whose claim accumulates)."""
    escalated: str | None = None
    """The escalation report's path, once written."""
    exec_run: str | None = None
    """The ``donegate exec`` run this session belongs to, if any."""
    task_digest: str | None = None
    """SHA-256 of the task file at the session's first event: pinned, never taken again."""

    @model_validator(mode="after")
    def _consistent(self) -> HookState:
        since_pass = 0
        for r in self.rounds:
            if r.outcome == "passed":
                since_pass = 0
            elif r.outcome in _COUNTED:
                since_pass += 1
        if self.blocks != since_pass:
            raise ValueError(
                f"blocks is {self.blocks} but the rounds since the last pass spent {since_pass}"
            )
        if self.escalated is not None and not self.rounds:
            raise ValueError("escalated with no rounds")
        return self

    def with_round(self, round_: Round, **changes: Any) -> HookState:
        """A copy with `round_` appended (and the count moved as its outcome says)."""
        blocks = self.blocks + 1 if round_.outcome in _COUNTED else self.blocks
        if round_.outcome == "passed":
            blocks = 0
        data = self.model_dump()
        data.update(changes)
        added = round_.model_dump()
        added["todos"] = added["todos"][:MAX_TODOS]
        data["rounds"] = _bounded([*data["rounds"], added])
        data["blocks"] = blocks
        if round_.outcome == "passed":
            data["escalated"] = None
        return HookState.model_validate(data)


def _bounded(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most `MAX_ROUNDS`: drop rounds before the last pass, then uncounted ones, oldest first."""
    if len(rounds) <= MAX_ROUNDS:
        return rounds
    last_pass = max((i for i, r in enumerate(rounds) if r["outcome"] == "passed"), default=-1)
    spare = [i for i in range(len(rounds)) if i < last_pass]
    spare += [i for i in range(max(last_pass, 0), len(rounds) - 1)
              if rounds[i]["outcome"] not in (*_COUNTED, "passed")]  # fmt: skip
    drop = set(spare[: len(rounds) - MAX_ROUNDS])
    return [r for i, r in enumerate(rounds) if i not in drop]


class TamperedState(Exception):
    """A state record failed validation; `quarantined` is where the record was moved."""

    def __init__(self, reason: str, *, path: Path, quarantined: Path | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path
        self.quarantined = quarantined


class StateStore:
    """State records under one folder (``data_dir()/hooks``), signed with a key kept there."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._checked: tuple[bytes, bytes, frozenset[str]] | None = None
        """The index last verified here (its bytes, the key's raw bytes) and the records it
        holds: a stop of a new session reads the index twice (`load`, then `save`), and the
        same bytes under the same key verify the same way, so they are verified once."""

    def path_for(self, task: str, session: str, subagent: str | None = None) -> Path:
        """The record of one task and session (and subagent)."""
        name = safe_id(session) + (f"--{safe_id(subagent)}" if subagent else "")
        return self.root / safe_id(task) / f"{name}.json"

    def fallback_path(self, task_path: str, cwd: str, session: str | None) -> Path:
        """The record counting blocks when the task itself cannot be read."""
        digest = hashlib.sha256(f"{task_path}\0{cwd}".encode()).hexdigest()[:24]
        return self.root / "_unreadable" / digest / f"{safe_id(session or 'no-session')}.json"

    def load(self, path: Path) -> HookState | None:
        """The record at `path` (None: there is none); `TamperedState` when it fails validation."""
        try:
            with open(path, "rb") as handle:
                raw = handle.read(_MAX_STATE_BYTES + 1)
        except FileNotFoundError:
            if self.known(path):
                raise self._tampered(
                    path, "is missing, yet the signed index of sessions holds it"
                ) from None
            return None
        except IsADirectoryError:
            raise self._tampered(path, "is a directory") from None
        problem, state = self._validate(raw)
        if problem is not None or state is None:
            raise self._tampered(path, problem or "unreadable")
        return state

    def tampered_count(self, path: Path) -> int:
        """How many records at `path` failed validation and were moved aside."""
        return len(list(path.parent.glob(f"{path.stem}.tampered-*.json")))

    # -- the index of sessions seen: append-only, each line signed by the gate's key ----------

    @property
    def index_path(self) -> Path:
        """``sessions.index`` beside the records: one signed JSON line per record ever made."""
        return self.root / _INDEX_FILE

    def known(self, path: Path) -> bool:
        """Whether the gate made a record at `path` before (so its absence is tampering).

        `TamperedState` when the index itself does not verify: a gate that cannot tell which
        sessions it has seen cannot tell a deleted record from a new session, and blocks."""
        try:
            with open(self.index_path, "rb") as handle:
                lines = handle.read(_MAX_INDEX_BYTES + 1)
        except FileNotFoundError:
            return False
        if len(lines) > _MAX_INDEX_BYTES:
            raise self._tampered(self.index_path, f"is over {_MAX_INDEX_BYTES} bytes")
        try:
            mine = signing_key(create=False).public
        except (UserError, OSError):  # no key, so nothing was ever signed into this index
            return False
        return self._index_key(path) in self._indexed(lines, mine)

    def _indexed(self, lines: bytes, mine: PublicKey) -> frozenset[str]:
        """The records the index `lines` holds, every line verified with `mine`."""
        if self._checked is not None and self._checked[:2] == (lines, mine.raw):
            return self._checked[2]
        records: set[str] = set()
        for number, line in enumerate(lines.splitlines(), 1):
            try:
                entry = json.loads(line)
                problem = (
                    signature_problem(entry, trusted=[mine]) if isinstance(entry, dict) else ""
                )
            except (ValueError, RecursionError):
                problem = "not JSON"
            if problem is not None:
                raise TamperedState(
                    f"the index of sessions {self.index_path} line {number} does not verify",
                    path=self.index_path,
                    quarantined=None,
                )
            if isinstance(record := entry.get("record"), str):
                records.add(record)
        self._checked = (lines, mine.raw, frozenset(records))
        return self._checked[2]

    def _remember(self, path: Path) -> None:
        """Add `path` to the index (once); appends only, never rewrites."""
        if self.known(path):
            return
        entry: dict[str, Any] = {"record": self._index_key(path), "at": time.time()}
        entry["signature"] = sign(entry)
        fd = os.open(self.index_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")

    def _index_key(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def save(self, path: Path, state: HookState) -> None:
        """Write `state` atomically, signed; `OSError` when the folder is not writable. The
        record joins the index of sessions seen first, so its later absence is tampering."""
        body = state.model_dump(mode="json")
        record = {"state": body, "mac": self._mac(body)}
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # a gate without its key (an unusable data folder) still counts the block in the record
        with contextlib.suppress(UserError, OSError):
            self._remember(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False), encoding="utf-8")
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)

    # -- validation ---------------------------------------------------------------------------

    def _validate(self, raw: bytes) -> tuple[str | None, HookState | None]:
        if len(raw) > _MAX_STATE_BYTES:
            return f"is over {_MAX_STATE_BYTES} bytes", None
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            return f"is not JSON ({type(exc).__name__})", None
        if not isinstance(record, dict) or set(record) != {"state", "mac"}:
            return "is not a signed state record", None
        body, mac = record["state"], record["mac"]
        if not isinstance(body, dict) or not isinstance(mac, str):
            return "is not a signed state record", None
        try:
            expected = self._mac(body)
        except (TypeError, ValueError) as exc:
            return f"cannot be checked: {exc}", None
        if not hmac.compare_digest(mac, expected):
            return "does not match its signature (edited outside the hook)", None
        try:
            return None, HookState.model_validate(body)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or "record"
            return f"is invalid at {where}: {first['msg']}", None

    def _tampered(self, path: Path, problem: str) -> TamperedState:
        reason = f"hook state {path} {problem}"
        moved: Path | None = None
        n = self.tampered_count(path) + 1
        target = path.with_name(f"{path.stem}.tampered-{n}.json")
        with contextlib.suppress(OSError):
            if os.path.lexists(path):
                path.replace(target)
            else:  # deleted: a marker keeps the count, so deleting again never resets it
                target.write_text(json.dumps({"missing": reason}), encoding="utf-8")
            moved = target
        return TamperedState(reason, path=path, quarantined=moved)

    def _mac(self, body: Any) -> str:
        digest = hmac.new(self._key(), canonical(body), hashlib.sha256).hexdigest()
        return f"hmac-sha256:{digest}"

    def _key(self) -> bytes:
        path = self.root / _KEY_FILE
        try:
            return bytes.fromhex(path.read_text(encoding="ascii").strip())
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            raise ValueError(f"the state key {path} is unusable: {exc}") from None
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{_KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_hex(32) + "\n")
            with contextlib.suppress(FileExistsError):  # another hook made it first
                os.link(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return bytes.fromhex(path.read_text(encoding="ascii").strip())


def now() -> float:
    """The time a round is stamped with."""
    return time.time()
