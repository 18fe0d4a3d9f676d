"""Acceptance checks: the harness asks the world, not the model, whether the work is done.

`run_check` never raises for a failing check: a command that exits non-zero, times out or is
missing, a file that is absent or outside the workdir, a database or server that is down, all
come back as a failed `CheckResult` with a one-line ``detail``. It raises `UserError` only when
the check itself is unusable as written (an unimportable ``python:`` check, a missing extra).

Checks come from the task, never from the workdir the agent writes: a ``python:`` check runs
in a child interpreter (``python -I``) whose ``sys.path`` holds the task's ``check_path`` and
the installed packages, with the workdir passed as the argument, and it reports on a private
descriptor with a nonce, so a module the agent writes cannot shadow it nor its output forge a
pass. Every process a check starts goes through `donegate.harness._process`, so a timeout
holds whatever the process's children do.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import importlib
import importlib.machinery
import json
import re
import secrets
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, assert_never

from donegate.errors import MissingExtra, UserError
from donegate.harness import _process, room
from donegate.harness._confine import confine
from donegate.harness._sources import _search_path, check_sources
from donegate.harness.spec import (
    CheckSpec,
    FileContainsCheck,
    FileExistsCheck,
    FileMatchesCheck,
    HttpCheck,
    JsonSchemaCheck,
    PythonCheck,
    RunCheck,
    SqlCheck,
    TestsCheck,
)
from donegate.harness.testsuite import run_tests
from donegate.records.check import CheckResult

if TYPE_CHECKING:
    import urllib.error

    from donegate.harness.protect import Manifest

__all__ = [
    "CHECK_CONCURRENCY",
    "CHECK_OUTPUT_CAP",
    "CheckResult",
    "check_sources",
    "run_check",
    "run_checks",
    "schema_error",
]

CHECK_CONCURRENCY = 4
"""``run:`` checks run at once, at most (`run_checks`)."""
CHECK_OUTPUT_CAP = 64 * 1024
"""Bytes of output a `CheckResult` keeps (the tail); the digest covers all of it."""

_T = TypeVar("_T")
_CHILD = Path(__file__).with_name("_check_child.py")


def run_checks(
    specs: Iterable[CheckSpec],
    workdir: Path,
    *,
    timeout: float = 120,
    concurrency: int = CHECK_CONCURRENCY,
    runner: Callable[[CheckSpec], CheckResult] | None = None,
    snapshot_of: Manifest | None = None,
    freeze: Iterable[int] = (),
) -> list[CheckResult]:
    """Run every check (all of them, so a report shows every failure); results in order.

    Adjacent ``run:`` checks are independent processes judging the same workdir, so they run
    together, at most `concurrency` at once (each keeps its own timeout and tree kill); any
    other check runs alone, after the ``run:`` checks declared before it have ended. `runner`
    runs one check (default `run_check` with `timeout`). Every check runs in the claim's clean
    room (`donegate.harness.room`): `snapshot_of` is written over its copies, the processes
    under `freeze` are stopped while it is copied.
    """
    specs = list(specs)
    with room.staged(workdir, snapshot_of=snapshot_of, freeze=freeze) as stage:
        if stage.problems:  # fail closed: no check runs on a room that is not the start's
            why = "the clean room is not as the task began: " + "; ".join(stage.problems)
            return [CheckResult(name=s.name, kind=s.kind, passed=False, detail=why) for s in specs]
        one = room.carry(runner or functools.partial(_run_one, workdir=workdir, timeout=timeout))
        return _run_all(specs, one, concurrency)


def _run_all(
    specs: list[CheckSpec], one: Callable[[CheckSpec], CheckResult], concurrency: int
) -> list[CheckResult]:
    results: list[CheckResult] = []
    batch: list[CheckSpec] = []
    for spec in [*specs, None]:
        if isinstance(spec, RunCheck) and concurrency > 1:
            batch.append(spec)
            continue
        if len(batch) == 1:
            results.append(one(batch[0]))
        elif batch:
            workers = min(concurrency, len(batch))
            from concurrent.futures import ThreadPoolExecutor  # only for checks side by side

            with ThreadPoolExecutor(workers, thread_name_prefix="donegate-check") as pool:
                results.extend(pool.map(one, batch))  # map keeps the declared order
        batch = []
        if spec is not None:
            results.append(one(spec))
    return results


def _run_one(spec: CheckSpec, *, workdir: Path, timeout: float) -> CheckResult:
    return run_check(spec, workdir=workdir, timeout=timeout)


def run_check(spec: CheckSpec, *, workdir: Path, timeout: float = 120) -> CheckResult:
    """Run one check on `workdir`'s clean room; `timeout` applies when the check sets none."""
    if not Path(workdir).resolve().is_dir():
        raise UserError(f"check workdir is not a directory: {workdir}")
    with room.staged(workdir) as stage:
        return _run_staged(spec, stage, timeout)


def _run_staged(spec: CheckSpec, stage: room.Stage, timeout: float) -> CheckResult:
    root = stage.room
    spec = stage.relocated(spec)  # an absolute path into the workdir reads the room's copy
    limit = spec.timeout or timeout
    started = time.monotonic()
    fields: dict[str, Any]
    try:
        match spec:
            case RunCheck():
                fields = _run(spec, stage, limit)
            case FileExistsCheck():
                fields = _file_exists(spec, root)
            case FileContainsCheck():
                fields = _file_contains(spec, root)
            case FileMatchesCheck():
                fields = _file_matches(spec, root)
            case JsonSchemaCheck():
                fields = _json_schema(spec, root)
            case SqlCheck():
                fields = _sql(spec, root, limit)
            case HttpCheck():
                fields = _http(spec, limit)
            case PythonCheck():
                fields = _python(spec, stage, limit)
            case TestsCheck():
                fields = run_tests(spec, stage, limit)
            case _:
                assert_never(spec)
    except PermissionError as exc:
        fields = {"passed": False, "detail": str(exc)}
    output = fields.pop("output", "")
    digest = fields.pop("output_digest", None) or hashlib.sha256(output.encode()).hexdigest()
    fields["detail"] = _one_line(fields["detail"])
    return CheckResult(
        name=spec.name,
        kind=spec.kind,
        output=_tail(output),
        output_digest=digest,
        duration_s=round(time.monotonic() - started, 6),
        **fields,
    )


def _run(spec: RunCheck, stage: room.Stage, timeout: float) -> dict[str, Any]:
    argv = spec.argv
    command = shlex.join(argv)
    try:
        jailed = stage.argv(argv, network=spec.network)
        done = _process.run(jailed, cwd=stage.room, timeout=timeout, env=stage.env())
    except OSError as exc:
        reason = "command not found" if isinstance(exc, FileNotFoundError) else exc.strerror
        return {"passed": False, "detail": f"{reason}: {argv[0]}", "command": command}
    if done.returncode == 1 and done.output.head.startswith(b"bwrap: execvp "):
        return {"passed": False, "detail": f"command not found: {argv[0]}", "command": command}
    text = _captured(done.output)
    fields = {"command": command, "output": text, "output_digest": done.output.digest}
    if done.timed_out:
        return {"passed": False, "detail": f"timed out after {timeout:g}s", **fields}
    code = done.returncode
    detail = f"exit code {code}"
    last = next((line for line in reversed(text.splitlines()) if line.strip()), "")
    if code != 0 and last:
        detail += f": {last.strip()}"
    return {"passed": code == 0, "detail": detail, "exit_code": code, **fields}


def _captured(output: _process.Output) -> str:
    """The captured output as text: all of it, or its last `CHECK_OUTPUT_CAP` bytes."""
    if output.complete:
        return output.head.decode("utf-8", errors="replace")
    return _tail_of(output.tail, output.total)


def _file_exists(spec: FileExistsCheck, root: Path) -> dict[str, Any]:
    path = confine(root, spec.file_exists)
    found = path.exists()
    return {
        "passed": found,
        "detail": f"{spec.file_exists} {'exists' if found else 'does not exist'}",
    }


def _file_contains(spec: FileContainsCheck, root: Path) -> dict[str, Any]:
    args = spec.file_contains
    text = _read(root, args.path)
    if text is None:
        return {"passed": False, "detail": f"{args.path} does not exist"}
    found = args.text in text
    verb = "contains" if found else "does not contain"
    return {"passed": found, "detail": f"{args.path} {verb} {args.text!r}"}


def _file_matches(spec: FileMatchesCheck, root: Path) -> dict[str, Any]:
    args = spec.file_matches
    text = _read(root, args.path)
    if text is None:
        return {"passed": False, "detail": f"{args.path} does not exist"}
    match = re.search(args.regex, text, re.MULTILINE)
    if match is None:
        return {"passed": False, "detail": f"{args.path} has no match for {args.regex!r}"}
    return {"passed": True, "detail": f"{args.path} matches {args.regex!r}: {match[0]!r}"}


def _json_schema(spec: JsonSchemaCheck, root: Path) -> dict[str, Any]:
    args = spec.json_schema
    text = _read(root, args.path)
    if text is None:
        return {"passed": False, "detail": f"{args.path} does not exist"}
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return {"passed": False, "detail": f"{args.path} is not valid JSON: {exc}"}
    error = schema_error(document, args.schema_)
    if error is not None:
        return {"passed": False, "detail": f"{args.path} does not match the schema: {error}"}
    return {"passed": True, "detail": f"{args.path} matches the schema"}


def _sql(spec: SqlCheck, root: Path, timeout: float) -> dict[str, Any]:
    try:
        sqlalchemy = importlib.import_module("sqlalchemy")
    except ImportError:
        raise MissingExtra("sqlalchemy", "postgres") from None
    args = spec.sql
    try:
        url = sqlalchemy.make_url(args.url)
    except sqlalchemy.exc.ArgumentError as exc:
        raise UserError(f"{spec.name}: invalid database url: {exc}") from None
    database = url.database
    if url.get_backend_name() == "sqlite" and database and database != ":memory:":
        path = root / database  # an absolute path stays absolute
        if not path.exists():  # connecting would create an empty database
            return {"passed": False, "detail": f"database file not found: {database}"}
        url = url.set(database=str(path))
    command = args.query

    def query() -> Any:
        engine = sqlalchemy.create_engine(url)
        try:
            with engine.connect() as conn:  # never committed: a check changes nothing
                return conn.execute(sqlalchemy.text(args.query)).first()
        finally:
            engine.dispose()

    try:
        row = _with_timeout(query, timeout)
    except TimeoutError:
        return {"passed": False, "detail": f"timed out after {timeout:g}s", "command": command}
    except Exception as exc:  # the driver's errors are the database's answer
        return {"passed": False, "detail": f"query failed: {exc}", "command": command}
    if row is None:
        return {"passed": False, "detail": "the query returned no rows", "command": command}
    return {"passed": True, "detail": f"first row: {tuple(row)!r}", "command": command}


def _http(spec: HttpCheck, timeout: float) -> dict[str, Any]:
    # http.client and urllib (ssl, email) are imported here, by the one check kind that uses
    # them: a hook process runs its task's checks and pays for what they need alone
    import http.client
    import urllib.error
    import urllib.request

    args = spec.http
    command = f"GET {args.url}"
    request = urllib.request.Request(args.url, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, body = response.status, response.read(CHECK_OUTPUT_CAP * 4)
    except urllib.error.HTTPError as exc:
        status, body = exc.code, _error_body(exc)
    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return {"passed": False, "detail": f"{command} failed: {reason}", "command": command}
    text = body.decode("utf-8", errors="replace")
    passed = status == args.status
    detail = f"{command} -> {status}" + ("" if passed else f", expected {args.status}")
    return {"passed": passed, "detail": detail, "command": command, "output": text}


def _error_body(exc: urllib.error.HTTPError) -> bytes:
    import http.client

    try:
        return exc.read(CHECK_OUTPUT_CAP * 4)
    except (OSError, AttributeError, http.client.HTTPException):  # no body to read
        return b""


def _python(spec: PythonCheck, stage: room.Stage, timeout: float) -> dict[str, Any]:
    module_name, _, attr = spec.python.partition(":")
    root = stage.cwd  # the workdir as the check's process sees it
    command = f"{spec.python}({str(root)!r})"
    nonce = secrets.token_hex(16)
    path = _search_path(spec, stage.workdir)
    job = {"nonce": nonce, "path": path, "target": spec.python, "workdir": str(root)}
    argv = [sys.executable, "-I", str(_CHILD)]
    try:
        done = _process.run(
            stage.argv(argv, network=spec.network, readable=[*path, str(_CHILD.parent)]),
            cwd=stage.room,
            env=stage.env(),
            timeout=timeout,
            stdin=json.dumps(job).encode(),
            result_pipe=True,
        )
    except OSError as exc:
        detail = f"cannot start the interpreter {sys.executable!r}: {exc.strerror or exc}"
        return {"passed": False, "detail": detail, "command": command}
    text = _captured(done.output)
    fields = {"command": command, "output": text, "output_digest": done.output.digest}
    if done.timed_out:
        return {"passed": False, "detail": f"timed out after {timeout:g}s", **fields}
    outcome = _outcome(done.result, nonce)
    if outcome is None:
        detail = f"the check's process exited with code {done.returncode} and no result"
        return {"passed": False, "detail": detail, **fields}
    if outcome["status"] == "no_module":
        raise UserError(f"{spec.name}: no module named {outcome['name']!r}")
    if outcome["status"] == "no_function":
        raise UserError(f"{spec.name}: {module_name} has no function {attr!r}")
    if outcome["status"] == "hidden":
        where = f"{outcome['name']!r} in the task's check_path is hidden by {outcome['by']}"
        raise UserError(f"{spec.name}: {where}; rename the module")
    return {"passed": outcome["passed"], "detail": outcome["detail"], **fields}


def _outcome(raw: bytes, nonce: str) -> dict[str, Any] | None:
    """The child's report; None when there is none or it lacks the nonce (fail closed)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or not hmac.compare_digest(str(data.get("nonce")), nonce):
        return None
    match data.get("status"):
        case "no_module" if isinstance(data.get("name"), str):
            return data
        case "hidden" if isinstance(data.get("name"), str) and isinstance(data.get("by"), str):
            return data
        case "no_function":
            return data
        case "done" if isinstance(data.get("passed"), bool) and isinstance(data.get("detail"), str):
            return data
    return None


def _with_timeout(fn: Callable[[], _T], timeout: float) -> _T:
    """Call `fn` in a daemon thread; raise TimeoutError if it is still running at `timeout`.

    Python cannot kill a thread: a stuck call is abandoned, not stopped.
    """
    outcome: list[tuple[bool, Any]] = []

    def target() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:
            outcome.append((False, exc))

    thread = threading.Thread(target=target, daemon=True, name="donegate-check")
    thread.start()
    thread.join(timeout)
    if not outcome:
        raise TimeoutError(f"timed out after {timeout:g}s")
    ok, value = outcome[0]
    if not ok:
        if isinstance(value, Exception):
            raise value
        raise RuntimeError(f"raised {value!r}")  # SystemExit from a check must not end us
    result: _T = value
    return result


def _read(root: Path, path: str) -> str | None:
    target = confine(root, path)
    try:
        return target.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def schema_error(value: Any, schema: Any, at: str = "$") -> str | None:
    """The first way `value` violates `schema` (full JSON Schema, via ``jsonschema``), or None."""
    from donegate.finish import validator  # here: a stop whose checks have no schema skips it

    errors = sorted(
        validator(schema).iter_errors(value),
        key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))),
    )
    if not errors:
        return None
    first = errors[0]
    where = at + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.absolute_path)
    return f"{where}: {first.message}"


def _tail(text: str) -> str:
    data = text.encode()
    return text if len(data) <= CHECK_OUTPUT_CAP else _tail_of(data, len(data))


def _tail_of(tail: bytes, total: int) -> str:
    """The end of an output of `total` bytes whose last bytes are `tail`, within the cap."""
    keep = tail[-(CHECK_OUTPUT_CAP - 64) :]  # 64: room for the marker
    marker = f"[... {total - len(keep)} earlier bytes omitted ...]\n"
    return marker + keep.decode("utf-8", errors="ignore")


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
