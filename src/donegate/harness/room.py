"""The clean room: every check runs on a copy of the workdir that only the check sandbox sees.

At each claim, whatever path made it (the loop's gate in ``run`` and the worker, ``exec``'s
gate, the three hooks, ``verify``), `checks.run_checks` enters `clean_room`, which

1. stops the agent's processes it is told of (``freeze``: ``SIGSTOP`` on their trees);
2. copies the workdir into the task's room, ``$DONEGATE_HOME/rooms/<workdir digest>/tree``
   (mode 0700, outside the workdir): only what changed since the last claim, by reflink where
   the filesystem allows, never bytecode (`donegate.sandbox._copy`);
3. lets the agent's processes run again;
4. writes the start snapshot over the room's copies (`donegate.harness.snapshot`): the
   protected files and the task-side files inside the workdir as they were when the task began;
5. hands back a `Stage`: where the gate reads files (the room), and how a check's program is
   started: under ``sandbox`` in a fresh bubblewrap jail whose only writable path is the room,
   bound at the workdir's own path (so recorded paths and outputs read as they would in the
   workdir, and the folders above it hold nothing the agent wrote), the system read-only, the
   home empty, no network unless the check says ``network: true``; under ``process`` in the
   room itself, with the same environment.

Either way Python neither reads nor writes bytecode in the room (``PYTHONDONTWRITEBYTECODE``,
``PYTHONPYCACHEPREFIX`` in a private folder) and never the user site (``PYTHONNOUSERSITE``).
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from donegate.config import data_dir, data_path
from donegate.harness import snapshot
from donegate.harness.protect import Manifest
from donegate.sandbox import Isolation, Jail, command, frozen, resolve
from donegate.sandbox._copy import Synced, sync

__all__ = ["Stage", "carry", "clean_room", "room_dir", "staged"]

_A = TypeVar("_A")
_R = TypeVar("_R")
_S = TypeVar("_S", bound=BaseModel)

_JAIL_CACHE = "/tmp/donegate-pycache"  # inside the jail's private /tmp


@dataclass(frozen=True, kw_only=True, slots=True)
class Stage:
    """Where one claim's checks run."""

    workdir: Path
    """The agent's workdir (resolved): the path check programs see as theirs under sandbox."""
    room: Path
    """The room on this machine: the copy the gate reads and the checks write."""
    isolation: Isolation
    """The backend the checks' programs start under."""
    problems: tuple[str, ...] = ()
    """What went wrong preparing the room (the claim fails on each, naming it)."""
    synced: Synced | None = None
    """What the copy did (for the bench and the logs)."""
    _cache: Path = field(default=Path("/nonexistent"), repr=False)

    @property
    def cwd(self) -> Path:
        """The folder a check's program starts in, as it sees it."""
        return self.workdir if self.isolation.backend == "sandbox" else self.room

    def env(self) -> dict[str, str]:
        """Variables every check's program gets: no user site, no bytecode from the room."""
        cache = _JAIL_CACHE if self.isolation.backend == "sandbox" else str(self._cache)
        return {
            "PYTHONNOUSERSITE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPYCACHEPREFIX": cache,
            "HOME": str(Path.home()) if self.isolation.backend == "sandbox" else str(self._cache),
        }

    def relocated(self, spec: _S) -> _S:
        """`spec` with an absolute path into the workdir turned into the room's copy of it."""
        for name in ("file_exists", "file_contains", "file_matches", "json_schema"):
            value = getattr(spec, name, None)
            if isinstance(value, str):
                return spec.model_copy(update={name: self._moved(value)})
            if value is not None and isinstance(getattr(value, "path", None), str):
                inner = value.model_copy(update={"path": self._moved(value.path)})
                return spec.model_copy(update={name: inner})
        return spec

    def _moved(self, path: str) -> str:
        if not os.path.isabs(path):
            return path
        absolute = Path(os.path.abspath(path))
        if absolute == self.workdir or self.workdir in absolute.parents:
            return str(self.room / absolute.relative_to(self.workdir))
        return path

    def argv(
        self, argv: Sequence[str], *, network: bool = False, readable: Iterable[str] = ()
    ) -> list[str]:
        """The argv that starts `argv` as a check over the room."""
        jail = Jail(
            rooms=((self.room, self.workdir),),
            readable=tuple(Path(p) for p in readable if os.path.isabs(p) and os.path.isdir(p)),
            network=network,
            cwd=self.workdir,
        )
        return command(argv, isolation=self.isolation, jail=jail)


def room_dir(workdir: Path) -> Path:
    """The room kept for `workdir` (between the claims of its task)."""
    key = hashlib.sha256(str(Path(workdir).resolve()).encode()).hexdigest()[:24]
    return data_path("rooms") / key


@contextlib.contextmanager
def clean_room(
    workdir: Path,
    *,
    snapshot_of: Manifest | None = None,
    freeze: Iterable[int] = (),
    isolation: Isolation | None = None,
) -> Iterator[Stage]:
    """Prepare the room for one claim's checks (steps 1-4 above); held locked while in use."""
    root = Path(workdir).resolve()
    iso = isolation if isolation is not None else resolve()
    base = room_dir(root)
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(base, 0o700)
    with open(base / "lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # one claim at a time uses a room
        tree = base / "tree"
        with frozen(freeze):
            synced = sync(root, tree, index=base / "index.json", skip=(data_dir(),))
        problems = snapshot.restore(snapshot_of, tree) if snapshot_of is not None else []
        with tempfile.TemporaryDirectory(prefix="donegate-check-") as private:
            yield Stage(
                workdir=root,
                room=tree,
                isolation=iso,
                problems=tuple(problems),
                synced=synced,
                _cache=Path(private),
            )


_ACTIVE: contextvars.ContextVar[Stage | None] = contextvars.ContextVar(
    "donegate_room", default=None
)


@contextlib.contextmanager
def staged(
    workdir: Path,
    *,
    snapshot_of: Manifest | None = None,
    freeze: Iterable[int] = (),
    isolation: Isolation | None = None,
) -> Iterator[Stage]:
    """The stage the checks of `workdir` run on now: the one a caller up the stack entered (the
    claim's), else a room entered here. Every check goes through this, whoever calls it."""
    current = _ACTIVE.get()
    if current is not None and current.workdir == Path(workdir).resolve():
        yield current
        return
    with clean_room(workdir, snapshot_of=snapshot_of, freeze=freeze, isolation=isolation) as st:
        token = _ACTIVE.set(st)
        try:
            yield st
        finally:
            _ACTIVE.reset(token)


def carry(fn: Callable[[_A], _R]) -> Callable[[_A], _R]:
    """`fn`, run in a copy of the caller's context (so a pool thread sees the claim's stage)."""
    ctx = contextvars.copy_context()

    def run(arg: _A) -> _R:
        return ctx.copy().run(fn, arg)

    return run
