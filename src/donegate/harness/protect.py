"""Protected paths: files the agent may not change, add or delete, proven by digests.

A task lists globs in ``protect:`` (``tests/**``, ``pyproject.toml``), relative to the workdir.
`take_manifest` digests every matching file when the task starts; `Manifest.changes` digests
again and names each file changed, added or deleted since. The gate fails a claim on any change
(``protected file changed: tests/test_calc.py``), the built-in ``write_file`` refuses covered
paths (`Manifest.covers`), and the certificate carries the digests (`Manifest.as_data`).
The agent hooks keep a manifest in their state and load it back with `Manifest.from_data`.

Glob syntax, anchored at the workdir: ``*`` and ``?`` match within one path segment (dotfiles
included), ``[...]`` a character class, ``**`` any number of segments (``**/conftest.py`` is
every conftest.py, the top one too, but as in pytest's own collection not through a hidden
folder, ``venv`` or ``node_modules``: name one to protect it, ``.venv/**``). A pattern also
covers everything under a directory it names (``tests`` is ``tests/**``). A pattern starting
with ``!`` takes paths out again.
Bytecode caches (anything under a ``__pycache__``) are never protected: every test run rewrites
them. So that a planted ``.pyc`` cannot stand in for a protected source, `clear_bytecode`
removes the cached bytecode of each protected ``.py`` file before the gate runs the checks.

`task_patterns` adds what a task needs protected whatever it lists: pytest's configuration
(``**/conftest.py``, ``pytest.ini``, ``pyproject.toml``...) when a ``run:`` check runs pytest, so
a conftest that skips the tests fails the gate; and, pinned (no ``!`` takes them out), the task
file, its ``python:`` check modules and a ``script:`` verifier when they sit inside the workdir.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from donegate.errors import ProtectError
from donegate.sandbox import owned_identities

if TYPE_CHECKING:
    from donegate.harness.spec import TaskSpec

__all__ = [
    "MAX_PROTECTED_FILES",
    "PYTEST_FILES",
    "Change",
    "Manifest",
    "ProtectError",
    "check_pattern",
    "take_manifest",
    "task_patterns",
    "uses_pytest",
]

PYTEST_FILES = (
    "**/conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
)
"""Files that change what pytest runs; protected when a ``run:`` check runs pytest."""
MAX_PROTECTED_FILES = 100_000
"""More matching files than this is an error, not a slow walk of a whole disk."""

_CHUNK = 1 << 20
_CACHE = "__pycache__"
_PYTEST = re.compile(r"(?<![\w.-])(?:py\.test|pytest)(?![\w-])")


@dataclass(frozen=True, kw_only=True, slots=True)
class Change:
    """One protected file that is not as it was when the task started."""

    kind: Literal["changed", "added", "deleted"]
    """What happened to it."""
    path: str
    """Its path relative to the workdir, with ``/`` separators."""

    @property
    def text(self) -> str:
        """``protected file changed: tests/test_calc.py``: the check name and the nudge."""
        return f"protected file {self.kind}: {self.path}"


def check_pattern(pattern: str) -> str:
    """`pattern` if it is a usable glob relative to the workdir; `ValueError` naming why not."""
    body = pattern.removeprefix("!")
    if not body.strip():
        raise ValueError(f"empty pattern {pattern!r}")
    if body.startswith("/") or "\\" in body:
        raise ValueError(f"{pattern!r}: use a path relative to the workdir, with / separators")
    segments = body.rstrip("/").split("/")
    if any(s in ("", ".", "..") for s in segments):
        raise ValueError(f"{pattern!r}: empty, '.' or '..' path segments are not allowed")
    return pattern


def _segment(seg: str) -> str:
    out, i = "", 0
    while i < len(seg):
        ch = seg[i]
        if ch == "*":
            out += "[^/]*"
        elif ch == "?":
            out += "[^/]"
        elif ch == "[":
            j = i + 1
            j += seg[j : j + 1] == "!"
            j += seg[j : j + 1] == "]"  # a leading ] is a member, not the end
            end = seg.find("]", j)
            if end == -1:
                out += re.escape(ch)
            else:
                inner = seg[i + 1 : end]
                inner = "^" + inner[1:] if inner.startswith("!") else inner
                out += "[" + inner.replace("\\", "\\\\").replace("[", "\\[") + "]"
                i = end
        else:
            out += re.escape(ch)
        i += 1
    return out


_DEEP = r"(?:(?!\.|node_modules/|venv/)[^/]+/)*"
"""``**/``: any depth, but not through a hidden folder, ``venv`` or ``node_modules``."""
_SKIPPED = re.compile(r"\.|node_modules\Z|venv\Z")


def _compile(pattern: str) -> re.Pattern[str]:
    segments = pattern.rstrip("/").split("/")
    out = ""
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            out += ".*" if last else _DEEP
        else:
            out += _segment(seg) + ("" if last else "/")
    return re.compile(out + r"(?:/.*)?\Z", re.DOTALL)


def _literal(path: str) -> str:
    """A glob matching exactly `path`."""
    return re.sub(r"([*?\[])", r"[\1]", path)


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """The digests of a workdir's protected files, and the rules that chose them."""

    root: Path
    """The resolved workdir."""
    patterns: tuple[str, ...] = ()
    """Globs covering protected paths; ``!GLOB`` takes paths out again."""
    pinned: tuple[str, ...] = ()
    """Paths protected whatever ``!`` says (the task's own files inside the workdir)."""
    files: Mapping[str, str] = field(default_factory=dict)
    """Relative path -> digest (``sha256:HEX``, ``symlink:TARGET``, ``special``...)."""
    tree: Mapping[str, str] | None = None
    """Every other file Python or a test runner may load, by path -> digest, when the task
    started (`donegate.harness._pyfiles`); what `donegate.harness.tamper` diffs. None in a
    record taken before donegate kept one."""
    allow: tuple[str, ...] = ()
    """The task's ``allow:`` globs: paths the tamper rules let the agent add or change."""
    _include: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _exclude: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _pins: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rules = [(p.startswith("!"), _compile(p.removeprefix("!"))) for p in self.patterns]
        # frozen: the compiled rules are set once, while the instance is being built
        object.__setattr__(self, "_include", tuple(r for neg, r in rules if not neg))
        object.__setattr__(self, "_exclude", tuple(r for neg, r in rules if neg))
        object.__setattr__(self, "_pins", tuple(_compile(_literal(p)) for p in self.pinned))

    @property
    def empty(self) -> bool:
        """No rule protects anything: no walk, no check result, nothing refused."""
        return not self.patterns and not self.pinned

    def covers(self, rel: str) -> bool:
        """Whether the relative path `rel` (``/`` separators) is protected."""
        if _CACHE in rel.split("/"):
            return False
        if any(r.match(rel) for r in self._pins):
            return True
        return any(r.match(rel) for r in self._include) and not any(
            r.match(rel) for r in self._exclude
        )

    def covers_path(self, target: Path) -> bool:
        """Whether `target` (an absolute path, already confined to the root) is protected."""
        try:
            rel = target.relative_to(self.root).as_posix()
        except ValueError:
            return False
        return rel != "." and self.covers(rel)

    def current(self) -> dict[str, str]:
        """Digest the protected files as they are now (`ProtectError` past the file limit)."""
        if self.empty:
            return {}
        return dict(_walk(self))

    def changes(self) -> tuple[Change, ...]:
        """Files changed, added or deleted since the manifest was taken, by path."""
        now = self.current()
        found = [Change(kind="deleted", path=p) for p in self.files if p not in now]
        for path, digest in now.items():
            if path not in self.files:
                found.append(Change(kind="added", path=path))
            elif self.files[path] != digest:
                found.append(Change(kind="changed", path=path))
        return tuple(sorted(found, key=lambda c: c.path))

    def clear_bytecode(self) -> None:
        """Remove the cached bytecode of every protected ``.py`` file (it is rebuilt from the
        source), so Python and pytest cannot load a ``.pyc`` the agent planted beside it.

        `ProtectError` when one cannot be removed.
        """
        for rel in self.files:
            if not rel.endswith(".py"):
                continue
            source = self.root / rel
            cache = source.parent / _CACHE
            try:
                if os.path.islink(cache):  # a link would lead the import (and unlinks) elsewhere
                    cache.unlink(missing_ok=True)
                elif cache.is_dir():
                    for pyc in cache.glob(f"{_literal(source.stem)}.*.pyc"):
                        pyc.unlink(missing_ok=True)
            except OSError as exc:
                raise ProtectError(f"cannot clear the bytecode of {rel}: {exc}") from None

    def start(self, rel: str) -> str | None:
        """The digest `rel` had when the task started (None: it was not there, or not kept)."""
        found = self.files.get(rel)
        return found if found is not None or self.tree is None else self.tree.get(rel)

    def as_data(self) -> dict[str, Any]:
        """Plain JSON values (for certificates and hook state)."""
        data: dict[str, Any] = {
            "patterns": list(self.patterns),
            "pinned": list(self.pinned),
            "files": dict(sorted(self.files.items())),
        }
        if self.tree is not None:
            data["tree"] = dict(sorted(self.tree.items()))
        if self.allow:
            data["allow"] = list(self.allow)
        return data

    @classmethod
    def from_data(cls, data: Any, root: Path) -> Manifest:
        """A manifest saved by `as_data`; `ValueError` naming what is malformed."""
        if not isinstance(data, dict):
            raise ValueError(f"protected files: expected a mapping, got {type(data).__name__}")
        patterns, pinned, files = data.get("patterns"), data.get("pinned"), data.get("files")
        for name, value in (("patterns", patterns), ("pinned", pinned)):
            if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
                raise ValueError(f"protected files: {name} is not a list of strings")
        if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in files.items()
        ):
            raise ValueError("protected files: files is not a mapping of path to digest")
        assert isinstance(patterns, list) and isinstance(pinned, list)
        for p in patterns:
            check_pattern(p)
        tree, allow = data.get("tree"), data.get("allow", [])
        if tree is not None and not (
            isinstance(tree, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in tree.items())
        ):
            raise ValueError("protected files: tree is not a mapping of path to digest")
        if not isinstance(allow, list) or not all(isinstance(p, str) for p in allow):
            raise ValueError("protected files: allow is not a list of strings")
        for p in allow:
            check_pattern(p)
        return cls(
            root=root,
            patterns=tuple(patterns),
            pinned=tuple(pinned),
            files=dict(files),
            tree=dict(tree) if tree is not None else None,
            allow=tuple(allow),
        )


def take_manifest(
    root: Path,
    patterns: Iterable[str] = (),
    *,
    pinned: Iterable[str] = (),
    allow: Iterable[str] = (),
) -> Manifest:
    """Digest every file under `root` the rules cover, and every other Python file (the
    `Manifest.tree`); `ProtectError` on a bad pattern."""
    from donegate.harness._pyfiles import python_files  # here: _pyfiles imports this module

    rules, allowed = tuple(dict.fromkeys(patterns)), tuple(dict.fromkeys(allow))
    for p in rules + allowed:
        try:
            check_pattern(p)
        except ValueError as exc:
            raise ProtectError(f"protect: {exc}") from None
    base = Manifest(root=Path(root).resolve(), patterns=rules, pinned=tuple(dict.fromkeys(pinned)))
    files = base.current()
    tree = {rel: d for rel, d in python_files(base.root).items() if rel not in files}
    taken = Manifest(
        root=base.root,
        patterns=base.patterns,
        pinned=base.pinned,
        files=files,
        tree=tree,
        allow=allowed,
    )
    from donegate.harness import snapshot  # here: snapshot imports this module

    snapshot.keep(taken)  # the contents behind the digests: the clean room's start snapshot
    return taken


def uses_pytest(spec: TaskSpec) -> bool:
    """Whether a ``run:`` check runs pytest (``pytest``, ``python -m pytest``, ``uv run ...``),
    or a ``tests:`` check does."""
    return any(
        (check.kind == "run" and _PYTEST.search(shlex.join(getattr(check, "argv", []))))
        or getattr(getattr(check, "tests", None), "runner", None) == "pytest"
        for check in spec.checks
    )


def task_patterns(
    spec: TaskSpec, root: Path, *, task_file: str | os.PathLike[str] | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(patterns, pinned)`` protecting what `spec` needs in `root`, whatever it lists."""
    root = Path(root).resolve()
    patterns = list(spec.protect)
    if uses_pytest(spec):
        patterns += PYTEST_FILES
    pinned = [
        rel for path in _trusted_files(spec, task_file) if (rel := _inside(root, path)) is not None
    ]
    return tuple(dict.fromkeys(patterns)), tuple(dict.fromkeys(pinned))


def _trusted_files(spec: TaskSpec, task_file: str | os.PathLike[str] | None) -> Iterator[Path]:
    """The task file, its check modules (found or not: a shadow is an addition) and verifier."""
    if spec.verifier is not None and spec.verifier.startswith("script:"):
        yield Path(spec.verifier.removeprefix("script:"))
    folder = Path(task_file).resolve().parent if task_file is not None else None
    if task_file is not None:
        yield Path(task_file)
    from donegate.harness import checks  # here: checks imports spec, which imports this

    yield from checks.check_sources(spec)
    roots = [Path(p) for p in spec.check_path]
    roots += [folder] if folder is not None else []
    for check in spec.checks:
        if check.kind != "python":
            continue
        module = str(getattr(check, "python", "")).partition(":")[0].split(".")
        for base in roots:
            for i in range(1, len(module) + 1):  # each package on the way, then the module
                yield base.joinpath(*module[:i], "__init__.py")
            yield base.joinpath(*module).with_suffix(".py")


def _inside(root: Path, path: Path) -> str | None:
    absolute = Path(os.path.abspath(path))
    for candidate in (absolute, absolute.resolve()):
        if candidate.is_relative_to(root) and candidate != root:
            return candidate.relative_to(root).as_posix()
    return None


def _may_hold(manifest: Manifest, rel_dir: str) -> bool:
    """Whether a rule could cover something under `rel_dir` (prunes the walk)."""
    parts = rel_dir.split("/") if rel_dir else []
    rules = [p for p in manifest.patterns if not p.startswith("!")]
    rules += [_literal(p) for p in manifest.pinned]
    return any(_reaches(rule.rstrip("/").split("/"), parts) for rule in rules)


def _reaches(segments: list[str], parts: list[str]) -> bool:
    if not parts or not segments:  # the folder is on the rule's way, or the rule covers it
        return True
    head = segments[0]
    if head == "**":
        if len(segments) == 1:
            return True
        return _reaches(segments[1:], parts) or (
            not _SKIPPED.match(parts[0]) and _reaches(segments, parts[1:])
        )
    if not re.fullmatch(_segment(head), parts[0], re.DOTALL):
        return False
    return _reaches(segments[1:], parts[1:])


def _walk(manifest: Manifest) -> Iterator[tuple[str, str]]:
    root = manifest.root
    count = 0
    own = owned_identities()  # the gate's own store: opening it would drop its locks
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        keep = []
        for name in sorted(dirnames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if name == _CACHE:
                continue
            if os.path.islink(os.path.join(dirpath, name)):
                filenames.append(name)  # a link is an entry, never followed
            elif _may_hold(manifest, rel):
                keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if not manifest.covers(rel):
                continue
            if own and _identity(os.path.join(dirpath, name)) in own:
                continue
            count += 1
            if count > MAX_PROTECTED_FILES:
                raise ProtectError(
                    f"protect: more than {MAX_PROTECTED_FILES} files match; narrow the globs"
                )
            yield rel, _digest(os.path.join(dirpath, name))


def _identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def _digest(path: str) -> str:
    """A file's content digest, a link's target, or what kind of entry it is."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            return "symlink:" + os.readlink(path)
        if not stat.S_ISREG(info.st_mode):
            return "special"
        # O_NONBLOCK: a file swapped for a FIFO after the lstat must not hang the gate
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return "special"
        h = hashlib.sha256()
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return "sha256:" + h.hexdigest()
