"""Acceptance checks run against the real world: subprocesses, files, sqlite, a local server."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import http.server
import json
import socket
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from donegate.errors import MissingExtra, UserError
from donegate.harness.checks import CHECK_OUTPUT_CAP, run_check, run_checks, schema_error
from donegate.harness.spec import CheckSpec, TaskSpec
from donegate.records.check import CheckResult

PY = sys.executable


def check(data: dict[str, Any], check_path: list[str] | None = None) -> CheckSpec:
    """One check, parsed the way a task file's check is."""
    task = {"id": "t", "prompt": "p", "checks": [data], "check_path": check_path or []}
    return TaskSpec.model_validate(task).checks[0]


def run(
    data: dict[str, Any], workdir: Path, check_path: list[str] | None = None, **kwargs: Any
) -> CheckResult:
    return run_check(check(data, check_path), workdir=workdir, **kwargs)


# run: -------------------------------------------------------------------------------------------


def test_run_passes_on_exit_zero_and_captures_both_streams(tmp_path: Path) -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr)"
    result = run({"run": [PY, "-c", code]}, tmp_path)
    assert result.passed
    assert (result.kind, result.exit_code, result.detail) == ("run", 0, "exit code 0")
    assert "out" in result.output
    assert "err" in result.output
    assert result.output_digest == hashlib.sha256(result.output.encode()).hexdigest()
    assert result.command is not None
    assert result.command.startswith(PY)
    assert result.duration_s > 0


def test_run_fails_on_a_nonzero_exit_with_the_last_line_as_detail(tmp_path: Path) -> None:
    code = "print('1 failed, 5 passed\\n'); raise SystemExit(3)"
    result = run({"run": [PY, "-c", code], "name": "tests"}, tmp_path)
    assert not result.passed
    assert result.name == "tests"
    assert result.exit_code == 3
    assert result.detail == "exit code 3: 1 failed, 5 passed"


def test_run_splits_a_string_without_a_shell(tmp_path: Path) -> None:
    result = run(
        {"run": f"{PY} -c 'import sys; print(sys.argv[1:])' 'a; touch pwned' '$(id)'"}, tmp_path
    )
    assert result.passed
    assert "['a; touch pwned', '$(id)']" in result.output
    assert not (tmp_path / "pwned").exists()


def test_run_uses_the_workdir_as_cwd(tmp_path: Path) -> None:
    result = run({"run": [PY, "-c", "import os; print(os.getcwd())"]}, tmp_path)
    assert result.output.strip() == str(tmp_path.resolve())


def test_a_missing_program_fails_the_check(tmp_path: Path) -> None:
    result = run({"run": "no-such-program-donegate --flag"}, tmp_path)
    assert not result.passed
    assert result.exit_code is None
    assert result.detail == "command not found: no-such-program-donegate"


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in {"Z", "X"}  # a zombie is dead, just not yet reaped


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_timeout_kills_the_whole_process_group(
    tmp_path: Path, room_of: Callable[[Path], Path], process_checks: None
) -> None:
    code = (
        "import subprocess, sys, time;"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        "open('child.pid', 'w').write(str(child.pid)); print('started', flush=True);"
        "time.sleep(60)"
    )
    started = time.monotonic()
    result = run({"run": [PY, "-c", code], "timeout": 1.5}, tmp_path, timeout=999)
    assert time.monotonic() - started < 20
    assert not result.passed
    assert result.detail == "timed out after 1.5s"
    assert result.exit_code is None
    assert "started" in result.output
    child = int((room_of(tmp_path) / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child)


def test_the_runner_timeout_applies_when_the_check_sets_none(tmp_path: Path) -> None:
    result = run({"run": [PY, "-c", "import time; time.sleep(30)"]}, tmp_path, timeout=0.5)
    assert result.detail == "timed out after 0.5s"


def test_output_keeps_the_tail_and_digests_everything(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('head\\n' + 'x' * 200_000 + '\\nTAIL')"
    result = run({"run": [PY, "-c", code]}, tmp_path)
    full = "head\n" + "x" * 200_000 + "\nTAIL"
    assert len(result.output.encode()) <= CHECK_OUTPUT_CAP
    assert result.output.endswith("x\nTAIL")
    assert "head" not in result.output
    assert "earlier bytes omitted" in result.output
    assert result.output_digest == hashlib.sha256(full.encode()).hexdigest()


def test_the_detail_is_one_line(tmp_path: Path) -> None:
    result = run({"run": [PY, "-c", "raise SystemExit('bad\\n  thing')"]}, tmp_path)
    assert result.detail == "exit code 1: thing"
    assert "\n" not in result.detail


# file checks -------------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import v2\n\ndef main():\n    pass\n")
    (tmp_path / "secret.txt").write_text("import v2\n")
    return root


@pytest.mark.parametrize(
    ("data", "passed", "detail"),
    [
        ({"file_exists": "src/app.py"}, True, "src/app.py exists"),
        ({"file_exists": "src"}, True, "src exists"),
        ({"file_exists": "src/missing.py"}, False, "src/missing.py does not exist"),
        ({"file_contains": {"path": "src/app.py", "text": "import v2"}}, True, "contains"),
        ({"file_contains": {"path": "src/app.py", "text": "import v1"}}, False, "does not contain"),
        ({"file_contains": {"path": "nope.py", "text": "x"}}, False, "nope.py does not exist"),
        ({"file_matches": {"path": "src/app.py", "regex": "^def main"}}, True, "matches"),
        ({"file_matches": {"path": "src/app.py", "regex": "^pass"}}, False, "has no match"),
        ({"file_matches": {"path": "src", "regex": "x"}}, False, "src does not exist"),
    ],
)
def test_file_checks(repo: Path, data: dict[str, Any], passed: bool, detail: str) -> None:
    result = run(data, repo)
    assert result.passed is passed
    assert detail in result.detail
    assert result.command is None


@pytest.mark.parametrize(
    "path", ["../secret.txt", "src/../../secret.txt", "{outside}/secret.txt", "link/secret.txt"]
)
def test_file_checks_are_confined_to_the_workdir(repo: Path, path: str) -> None:
    (repo / "link").symlink_to(repo.parent)
    path = path.format(outside=repo.parent)
    for data in (
        {"file_exists": path},
        {"file_contains": {"path": path, "text": "import v2"}},
        {"json_schema": {"path": path, "schema": {}}},
    ):
        result = run(data, repo)
        assert not result.passed
        assert "resolves outside the workdir" in result.detail


def test_an_absolute_path_inside_the_workdir_is_allowed(repo: Path) -> None:
    assert run({"file_exists": str(repo / "src" / "app.py")}, repo).passed


# json_schema -------------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "required": ["endpoints"],
    "properties": {"endpoints": {"type": "array", "items": {"type": "string"}, "minItems": 6}},
}


@pytest.mark.parametrize(
    ("content", "passed", "detail"),
    [
        (json.dumps({"endpoints": list("abcdef")}), True, "out.json matches the schema"),
        (
            json.dumps({"endpoints": list("abcd")}),
            False,
            "$.endpoints: ['a', 'b', 'c', 'd'] is too",
        ),
        (json.dumps({"endpoints": [1] * 6}), False, "$.endpoints[0]: 1 is not of type 'string'"),
        (json.dumps({}), False, "'endpoints' is a required property"),
        ("{not json", False, "out.json is not valid JSON"),
    ],
)
def test_json_schema_check(tmp_path: Path, content: str, passed: bool, detail: str) -> None:
    (tmp_path / "out.json").write_text(content)
    result = run({"json_schema": {"path": "out.json", "schema": SCHEMA}}, tmp_path)
    assert result.passed is passed
    assert detail in result.detail


def test_json_schema_check_on_a_missing_file(tmp_path: Path) -> None:
    result = run({"json_schema": {"path": "out.json", "schema": SCHEMA}}, tmp_path)
    assert (result.passed, result.detail) == (False, "out.json does not exist")


@pytest.mark.parametrize(
    ("value", "schema", "error"),
    [
        (1, {"type": "integer"}, None),
        (1.0, {"type": "integer"}, None),
        (1.5, {"type": "integer"}, "is not of type 'integer'"),
        (True, {"type": "integer"}, "is not of type 'integer'"),
        (1, {"type": "number"}, None),
        (None, {"type": ["string", "null"]}, None),
        ("a", {"enum": ["b"]}, "'a' is not one of ['b']"),
        ("a", {"const": "a"}, None),
        ("ab", {"minLength": 3}, "is too short"),
        ("abcd", {"maxLength": 3}, "is too long"),
        ("v2", {"pattern": "^v[0-9]$"}, None),
        ("x", {"pattern": "^v"}, "does not match"),
        (5, {"minimum": 6}, "5 is less than the minimum of 6"),
        (5, {"exclusiveMaximum": 5}, "5 is greater than or equal to the maximum of 5"),
        ([1, 1], {"uniqueItems": True}, "has non-unique elements"),
        ([1, 2, 3], {"maxItems": 2}, "is too long"),
        (
            {"a": 1, "b": 2},
            {"properties": {"a": {}}, "additionalProperties": False},
            "Additional properties are not allowed ('b' was unexpected)",
        ),
        (
            {"b": "x"},
            {"additionalProperties": {"type": "integer"}},
            "$.b: 'x' is not of type 'integer'",
        ),
        (
            3,
            {"anyOf": [{"type": "string"}, {"minimum": 4}]},
            "is not valid under any of the given schemas",
        ),
        (3, {"oneOf": [{"type": "integer"}, {"minimum": 1}]}, "is valid under each of"),
        (3, {"allOf": [{"type": "integer"}, {"maximum": 2}]}, "3 is greater than the maximum of 2"),
        (3, {"not": {"type": "integer"}}, "should not be valid under"),
        (
            {"x": [{"id": "a"}]},
            {"properties": {"x": {"items": {"required": ["n"]}}}},
            "$.x[0]: 'n' is a required property",
        ),
    ],
)
def test_schema_error(value: Any, schema: dict[str, Any], error: str | None) -> None:
    found = schema_error(value, schema)
    if error is None:
        assert found is None
    else:
        assert found is not None
        assert error in found


# sql ---------------------------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("create table users (name text)")
        conn.execute("create table orders (id integer)")
        conn.execute("insert into users values ('ada')")
    return path


def test_sql_passes_when_rows_come_back(tmp_path: Path, db: Path) -> None:
    result = run({"sql": {"url": "sqlite:///app.db", "query": "select name from users"}}, tmp_path)
    assert result.passed
    assert result.detail == "first row: ('ada',)"
    assert result.command == "select name from users"


def test_sql_fails_on_no_rows(tmp_path: Path, db: Path) -> None:
    result = run({"sql": {"url": "sqlite:///app.db", "query": "select * from orders"}}, tmp_path)
    assert (result.passed, result.detail) == (False, "the query returned no rows")


def test_sql_fails_on_a_bad_query_and_changes_nothing(tmp_path: Path, db: Path) -> None:
    bad = run({"sql": {"url": "sqlite:///app.db", "query": "select * from nope"}}, tmp_path)
    assert not bad.passed
    assert bad.detail.startswith("query failed:")
    assert "no such table" in bad.detail
    write = {"sql": {"url": "sqlite:///app.db", "query": "insert into orders values (1)"}}
    assert not run(write, tmp_path).passed
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from orders").fetchone() == (0,)


def test_sql_on_a_missing_sqlite_file_fails_without_creating_it(tmp_path: Path) -> None:
    result = run({"sql": {"url": "sqlite:///none.db", "query": "select 1"}}, tmp_path)
    assert (result.passed, result.detail) == (False, "database file not found: none.db")
    assert not (tmp_path / "none.db").exists()


def test_sql_accepts_an_absolute_sqlite_path(tmp_path: Path, db: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    result = run({"sql": {"url": f"sqlite:///{db}", "query": "select 1 from users"}}, other)
    assert result.passed


def test_sql_without_sqlalchemy_names_the_extra(
    tmp_path: Path, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    with pytest.raises(MissingExtra, match=r"donegate\[postgres\]"):
        run({"sql": {"url": "sqlite:///app.db", "query": "select 1"}}, tmp_path)


def test_sql_with_a_malformed_url_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="invalid database url"):
        run({"sql": {"url": "not a url", "query": "select 1"}}, tmp_path)


# http --------------------------------------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/slow":
            time.sleep(2)
        status = 500 if self.path == "/broken" else 200
        body = f"path={self.path}".encode()
        with contextlib.suppress(ConnectionError):  # the slow path's client has given up
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_http_passes_on_the_expected_status(tmp_path: Path, server: str) -> None:
    result = run({"http": {"url": f"{server}/health"}}, tmp_path)
    assert result.passed
    assert result.detail == f"GET {server}/health -> 200"
    assert result.output == "path=/health"


def test_http_fails_on_another_status(tmp_path: Path, server: str) -> None:
    result = run({"http": {"url": f"{server}/broken"}}, tmp_path)
    assert not result.passed
    assert result.detail.endswith("-> 500, expected 200")
    assert result.output == "path=/broken"
    assert run({"http": {"url": f"{server}/broken", "status": 500}}, tmp_path).passed


def test_http_fails_when_nothing_listens(tmp_path: Path, server: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run({"http": {"url": f"http://127.0.0.1:{port}/"}}, tmp_path)
    assert not result.passed
    assert "failed" in result.detail


def test_http_times_out(tmp_path: Path, server: str) -> None:
    result = run({"http": {"url": f"{server}/slow"}, "timeout": 0.3}, tmp_path)
    assert not result.passed
    assert "timed out" in result.detail


# python ------------------------------------------------------------------------------------------

CHECK_MODULE = """
import time
def ok(workdir):
    return (workdir / "done.txt").exists()
def explained(workdir):
    return False, "4 of 6 endpoints migrated"
def boom(workdir):
    raise ValueError("kaput")
def odd(workdir):
    return 42
def slow(workdir):
    time.sleep(5)
    return True
def exits(workdir):
    raise SystemExit(1)
not_callable = 3
"""


@pytest.fixture
def task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The task's own folder, outside the workdir, where its check modules live."""
    return tmp_path_factory.mktemp("task")


@pytest.fixture
def run_py(tmp_path: Path, task_dir: Path) -> Callable[[str], CheckResult]:
    """Run a python check from the task's folder in the workdir `tmp_path`."""
    return lambda target: run({"python": target}, tmp_path, [str(task_dir)])


@pytest.fixture
def module(task_dir: Path) -> str:
    """A uniquely named check module in the task's folder."""
    name = f"checks_{uuid.uuid4().hex}"
    (task_dir / f"{name}.py").write_text(CHECK_MODULE)
    return name


@pytest.mark.parametrize(
    ("function", "passed", "detail"),
    [
        ("explained", False, "4 of 6 endpoints migrated"),
        ("boom", False, "raised ValueError('kaput')"),
        ("odd", False, "returned 42; expected a bool or (bool, str)"),
        ("exits", False, "raised SystemExit(1)"),
    ],
)
def test_python_check_results(
    run_py: Callable[[str], CheckResult], module: str, function: str, passed: bool, detail: str
) -> None:
    result = run_py(f"{module}:{function}")
    assert (result.passed, result.detail) == (passed, detail)


def test_python_check_gets_the_workdir(tmp_path: Path, task_dir: Path, module: str) -> None:
    assert not run({"python": f"{module}:ok"}, tmp_path, [str(task_dir)]).passed
    (tmp_path / "done.txt").write_text("")
    result = run({"python": f"{module}:ok"}, tmp_path, [str(task_dir)])
    assert (result.passed, result.detail) == (True, "returned True")
    assert str(tmp_path) not in sys.path
    assert module not in sys.modules  # it ran in a child process, not in the harness


def test_python_check_times_out(tmp_path: Path, task_dir: Path, module: str) -> None:
    result = run({"python": f"{module}:slow", "timeout": 0.2}, tmp_path, [str(task_dir)])
    assert (result.passed, result.detail) == (False, "timed out after 0.2s")


def test_a_broken_check_module_fails_the_check(tmp_path: Path, task_dir: Path) -> None:
    (task_dir / "broken_chk.py").write_text("def f(:\n")
    (task_dir / "needs_dep_chk.py").write_text("import no_such_dependency_xyz\n")
    syntax = run({"python": "broken_chk:f"}, tmp_path, [str(task_dir)])
    dependency = run({"python": "needs_dep_chk:f"}, tmp_path, [str(task_dir)])
    assert not syntax.passed
    assert syntax.detail.startswith("import failed: SyntaxError")
    assert not dependency.passed
    assert "no_such_dependency_xyz" in dependency.detail


def test_an_unknown_check_module_or_function_is_a_user_error(
    tmp_path: Path, task_dir: Path, module: str
) -> None:
    folders = [str(task_dir)]
    with pytest.raises(UserError, match="no module named 'no_such_mod_xyz'"):
        run({"python": "no_such_mod_xyz:f"}, tmp_path, folders)
    with pytest.raises(UserError, match="has no function 'missing'"):
        run({"python": f"{module}:missing"}, tmp_path, folders)
    with pytest.raises(UserError, match="has no function 'not_callable'"):
        run({"python": f"{module}:not_callable"}, tmp_path, folders)


# all checks --------------------------------------------------------------------------------------


def test_run_checks_runs_every_check_in_order(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello")
    spec = TaskSpec.model_validate(
        {
            "id": "t",
            "prompt": "p",
            "checks": [
                {"file_exists": "missing.txt"},
                {"file_contains": {"path": "a.txt", "text": "hello"}},
                {"run": [PY, "-c", "raise SystemExit(1)"], "name": "fails"},
            ],
        }
    )
    results = run_checks(spec.checks, tmp_path)
    assert [(r.name, r.passed) for r in results] == [
        ("file_exists: missing.txt", False),
        ("file_contains: a.txt has 'hello'", True),
        ("fails", False),
    ]


def test_a_missing_workdir_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not a directory"):
        run({"file_exists": "a"}, tmp_path / "nope")


def test_check_results_are_frozen_and_keyword_only() -> None:
    with pytest.raises(TypeError):
        CheckResult("n", "run", True, "d")  # type: ignore[call-arg]
    result = CheckResult(name="n", kind="run", passed=True, detail="d")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.passed = False  # type: ignore[misc]
    assert result.output_digest == hashlib.sha256(b"").hexdigest()
