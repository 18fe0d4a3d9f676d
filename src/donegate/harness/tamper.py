"""Files that change how checks run: any such file the agent added or changed fails the claim.

A check that runs ``python3 -m unittest`` trusts the interpreter to find the real runner, its
configuration and the real standard library; the agent writes where the interpreter looks.
Against the task's start record (`Manifest.tree`, `Manifest.files`), each file added or changed
since is judged (`findings`), and falls in one of three groups:

- **shadow**: a module, package, bytecode or extension that shadows a standard-library module
  (``sys.stdlib_module_names``), a top-level name installed in an interpreter the checks run
  (listed from its ``sys.path``), or the runners themselves (``pytest``, ``_pytest``), in a
  folder a check's ``sys.path`` may put first (`import_roots`): the workdir, the folder of
  every test file and its pytest base folder, folders and scripts a check names. Anywhere, a
  package or extension that outranks a module of the same name beside it (a ``test_x/``
  beside ``test_x.py``) shadows that module.
- **config**: a test runner's configuration wherever it sits: ``pytest.ini``,
  ``.pytest.ini``, ``pytest.toml``, ``.pytest.toml``, ``tox.ini``, ``setup.cfg``, any
  ``conftest`` module, and ``pyproject.toml`` when its ``[tool]``, ``[build-system]`` or
  ``[project.entry-points]`` tables change (not its other metadata).
- **startup**: a Python startup file (``*.pth``, ``sitecustomize``, ``usercustomize``).

No ``!`` pattern of ``protect:`` takes a file out; only the task's ``allow:`` globs do. A file
that is protected is judged by the protection (`donegate.harness.gate.protected_results`), not
twice. A record from before donegate kept a tree (`Manifest.tree` is None) is not judged.
"""

from __future__ import annotations

import functools
import importlib.machinery
import json
import os
import re
import shutil
import site
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from donegate.harness import _process
from donegate.harness._pyfiles import CONFIG_FILES, python_files
from donegate.harness.protect import Manifest, _compile
from donegate.harness.spec import CheckSpec, RunCheck

__all__ = ["RUNNER_MODULES", "Finding", "changed_files", "findings", "import_roots"]

RUNNER_MODULES = frozenset({"pytest", "_pytest", "unittest"})
"""Runner modules that count as shadowed whether or not the checks' interpreter has them."""
STARTUP_MODULES = frozenset({"sitecustomize", "usercustomize"})
_CACHE = "__pycache__"
_EXT = (*importlib.machinery.EXTENSION_SUFFIXES, ".so", ".pyd")
_TEST_FILE = re.compile(r"(?:test_.*|.*_test|conftest)\.py\Z")
_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?\Z")
_UNCOLLECTED = re.compile(r"\.|node_modules\Z|site-packages\Z|dist-packages\Z")


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    """One added or changed file that changes how checks run."""

    path: str
    """The file, relative to the workdir."""
    group: Literal["shadow", "config", "startup"]
    reason: str
    """``shadows the standard library module unittest``, ``configures the test runner``..."""
    added: bool
    """Added since the task started (else changed)."""

    @property
    def text(self) -> str:
        """``unittest.py shadows the standard library module unittest``: the check's name."""
        return f"{self.path} {self.reason}"


def changed_files(manifest: Manifest, now: dict[str, str] | None = None) -> dict[str, bool] | None:
    """Path -> added? for every Python file added or changed since the start, minus protected
    and allowed paths; None when the record keeps no tree. `now`: the walk, when done already."""
    if manifest.tree is None:
        return None
    allow = [_compile(p) for p in manifest.allow]
    out: dict[str, bool] = {}
    for rel, digest in (now if now is not None else python_files(manifest.root)).items():
        start = manifest.start(rel)
        if start == digest or manifest.covers(rel) or rel in manifest.files:
            continue
        if any(rule.match(rel) for rule in allow):
            continue
        out[rel] = start is None
    return out


def findings(
    manifest: Manifest | None,
    checks: Sequence[CheckSpec],
    now: dict[str, str] | None = None,
    changed: dict[str, bool] | None = None,
) -> list[Finding]:
    """What in the agent's changes changes how `checks` run; `ProtectError` when the workdir
    cannot be walked. `now`, `changed`: the walk and `changed_files`, when done already."""
    if manifest is None:
        return []
    now = now if now is not None else python_files(manifest.root)
    changed = changed_files(manifest, now) if changed is None else changed
    if not changed:
        return []
    root = manifest.root
    roots = import_roots(root, checks, now)
    names = _shadowable(checks, root)
    found = []
    for rel, added in sorted(changed.items()):
        reason = _judge(rel, manifest, now, roots, names)
        if reason is not None:
            group, why = reason
            found.append(Finding(path=rel, group=group, reason=why, added=added))
    return found


# -- one file ----------------------------------------------------------------------------------


def _judge(
    rel: str, manifest: Manifest, now: dict[str, str], roots: set[str], names: dict[str, str]
) -> tuple[Literal["shadow", "config", "startup"], str] | None:
    parts = rel.split("/")
    name = parts[-1]
    entry = _entry(parts)
    if entry is not None and entry[2] == "cache":
        source = "/".join([*entry[0], f"{entry[1]}.py"])
        start = manifest.start(source)
        if start is not None and now.get(source) == start:
            return None  # the cache of a source as it was at the start
    module = entry[1] if entry is not None else None
    if name.endswith(".pth") or module in STARTUP_MODULES:
        return "startup", "is a Python startup file"
    if name in CONFIG_FILES or module == "conftest":
        return "config", "configures the test runner"
    if name == "pyproject.toml":
        return "config", "changes its [tool], [build-system] or entry-point tables"
    if entry is None:
        return None
    folder, module, kind = entry
    candidates = [("/".join(folder), module)]
    for i in range(len(folder)):  # a package above: each root it may be imported from
        top = folder[i]
        above = "/".join(folder[:i])
        if above in roots and _is_package(manifest.root / above / top):
            candidates.append((above, top))
    for where, top in candidates:
        if where in roots and top in names:
            return "shadow", f"shadows {names[top]} {top}"
    beaten = _outranked(manifest.root / "/".join(folder), module, kind)
    if beaten is not None:
        return "shadow", f"shadows {'/'.join([*folder, beaten])}"
    return None


_RANK = {"package": 0, "extension": 1, "source": 2, "bytecode": 3}


def _entry(parts: list[str]) -> tuple[list[str], str, str] | None:
    """``(folder parts, module name, kind)`` for a file Python imports a module from."""
    name = parts[-1]
    if len(parts) >= 2 and parts[-2] == _CACHE and name.endswith(".pyc"):
        module, kind, folder = name.partition(".")[0], "cache", parts[:-2]
    elif name.startswith("__init__.") and len(parts) >= 2 and _suffix_kind(name):
        module, kind, folder = parts[-2], "package", parts[:-2]
    elif (kind_or := _suffix_kind(name)) is not None:
        module, kind, folder = name.partition(".")[0], kind_or, parts[:-1]
    elif "." not in name and name.isidentifier():  # a linked folder: a package
        module, kind, folder = name, "package", parts[:-1]
    else:
        return None
    return (folder, module, kind) if module.isidentifier() else None


def _suffix_kind(name: str) -> str | None:
    if name.endswith(_EXT):
        return "extension"
    if name.endswith((".py", ".pyw")):
        return "source"
    if name.endswith((".pyc", ".pyo")):
        return "bytecode"
    return None


def _is_package(folder: Path) -> bool:
    return any((folder / f"__init__{s}").exists() for s in (".py", ".pyc", *_EXT))


def _outranked(folder: Path, module: str, kind: str) -> str | None:
    """The file of `module` in `folder` that an entry of `kind` takes the import from (Python's
    order in one folder: package, extension, source, bytecode), if there is one."""
    if kind == "cache":  # stands for its source, outranks nothing
        return None
    lower = {
        "extension": [f"{module}{s}" for s in _EXT],
        "source": [f"{module}.py"],
        "bytecode": [f"{module}.pyc"],
    }
    for other, files in lower.items():
        if _RANK[other] > _RANK[kind]:
            for file in files:
                if (folder / file).exists():
                    return file
    return None


# -- where checks import from ------------------------------------------------------------------


def import_roots(
    root: Path, checks: Sequence[CheckSpec], now: Iterable[str] | None = None
) -> set[str]:
    """Folders (relative, ``""`` the workdir) a check's ``sys.path`` may put first.

    The workdir (``-m``, ``python -m pytest``, unittest discovery); the folder of each test
    file and conftest, and its pytest base folder (the first one up without ``__init__.py``:
    pytest's ``prepend`` import mode puts it first); every folder and script a check names.
    """
    roots = {""}
    named: list[str] = []
    for check in checks:
        named += _argv_paths(check)
    files = list(now) if now is not None else list(python_files(root))
    for rel in [*files, *named]:
        parts = rel.split("/")
        if not (_TEST_FILE.match(parts[-1]) or rel in named):
            continue
        if any(_UNCOLLECTED.match(p) for p in parts[:-1]):
            continue
        folder = parts[:-1]
        roots.add("/".join(folder))
        while folder and _is_package(root.joinpath(*folder)):
            folder = folder[:-1]
        roots.add("/".join(folder))
    for rel in named:
        if (root / rel).is_dir():
            roots.add(rel)
    return roots


def _argv_paths(check: CheckSpec) -> list[str]:
    """Paths inside the workdir a check's command names (``tests``, ``-s tests``,
    ``PYTHONPATH=src``, ``tests/test_x.py``)."""
    if not isinstance(check, RunCheck):
        return []
    out = []
    for token in check.argv[1:]:
        for raw in re.split(r"[=:,]", token):
            piece = raw.split("::")[0].strip().rstrip("/")
            if piece and not piece.startswith(("-", "/")) and ".." not in piece.split("/"):
                out.append(piece.removeprefix("./"))
    return out


# -- what may be shadowed ----------------------------------------------------------------------


def _shadowable(checks: Sequence[CheckSpec], root: Path) -> dict[str, str]:
    """Module name -> what it is (``the standard library module``, ``the installed package``)."""
    names: dict[str, str] = {}
    for interpreter in _interpreters(checks):
        for name in _installed(interpreter, str(root)):
            names.setdefault(name, "the installed package")
    for name in RUNNER_MODULES - set(sys.stdlib_module_names):
        names[name] = "the installed package"
    for name in sys.stdlib_module_names:
        names[name] = "the standard library module"
    return names


def _interpreters(checks: Iterable[CheckSpec]) -> list[str]:
    """The interpreters the checks run: this one, and each ``run:`` check's Python."""
    found = [sys.executable]
    for check in checks:
        if isinstance(check, RunCheck):
            program = shutil.which(check.argv[0])
            python = _python_of(program) if program is not None else None
            if python is not None:
                found.append(python)
    return list(dict.fromkeys(found))


def _python_of(program: str) -> str | None:
    if _PYTHON.match(os.path.basename(program)):
        return program
    try:
        with open(program, "rb") as f:
            first = f.readline(256).decode("utf-8", errors="replace")
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if words and os.path.basename(words[0]) == "env" and len(words) > 1:
        words = [shutil.which(words[1]) or words[1]]
    if words and _PYTHON.match(os.path.basename(words[0])):
        return words[0]
    return None


_LIST = """
import json, os, sys
out = []
for entry in sys.path[1:]:
    try:
        names = os.listdir(entry)
    except OSError:
        continue
    out.append([entry, names])
print(json.dumps(out))
"""


@functools.lru_cache(maxsize=64)
def _installed(interpreter: str, workdir: str) -> frozenset[str]:
    """Top-level names on `interpreter`'s ``sys.path`` outside `workdir` (its site-packages,
    user site, ``PYTHONPATH``); empty when it cannot be asked."""
    listing: Any
    if interpreter == sys.executable:  # this interpreter: where a fresh one looks, no child
        listing = [[p, _listdir(p)] for p in _fresh_path()]
    else:
        try:
            done = _process.run([interpreter, "-c", _LIST], cwd=Path("/"), timeout=30)
            listing = json.loads(done.output.head)
        except (OSError, ValueError):
            return frozenset()
    names: set[str] = set()
    for entry, files in listing if isinstance(listing, list) else ():
        folder = Path(str(entry)).resolve()
        if folder.is_relative_to(workdir) and folder.name not in ("site-packages", "dist-packages"):
            continue  # the project's own source (an editable install), not an installed name
        for file in files if isinstance(files, list) else ():
            name = str(file).partition(".")[0]
            if name.isidentifier() and not name.startswith("__editable__"):
                names.add(name)
    return frozenset(names)


def _fresh_path() -> list[str]:
    """The folders a fresh run of this interpreter imports from (not this process's
    ``sys.path``, which a caller may have extended): stdlib, site-packages, user site."""
    paths = sysconfig.get_paths()
    found = [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths]
    found += [*site.getsitepackages(), site.getusersitepackages()]
    return [p for p in dict.fromkeys(found) if os.path.isdir(p)]


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []
