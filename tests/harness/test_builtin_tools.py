"""Built-in tools: confined to the workspace, no shell, bounded output and time."""

from __future__ import annotations

import inspect
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from donegate.errors import UserError
from donegate.harness.builtin_tools import COMMAND_OUTPUT_CAP, Workspace

PY = shlex.quote(sys.executable)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret")
    return Workspace(root)


def test_the_signatures_are_the_contract() -> None:
    expected = {
        "read_file": "(self, path: 'str') -> 'str'",
        "write_file": "(self, path: 'str', content: 'str') -> 'str'",
        "list_dir": "(self, path: 'str' = '.') -> 'str'",
        "run_command": "(self, command: 'str', timeout: 'int' = 60) -> 'str'",
    }
    for name, signature in expected.items():
        method = getattr(Workspace, name)
        assert str(inspect.signature(method)) == signature
        assert method.__doc__


def test_write_then_read(ws: Workspace) -> None:
    assert ws.write_file("src/pkg/app.py", "café\n") == "wrote 6 bytes to src/pkg/app.py"
    assert (ws.root / "src" / "pkg" / "app.py").read_text(encoding="utf-8") == "café\n"
    assert ws.read_file("src/pkg/app.py") == "café\n"
    assert ws.write_file("src/pkg/app.py", "") == "wrote 0 bytes to src/pkg/app.py"
    assert ws.read_file("./src/pkg/../pkg/app.py") == ""


def test_a_missing_file_names_the_relative_path(ws: Workspace) -> None:
    with pytest.raises(FileNotFoundError) as info:
        ws.read_file("src/nope.py")
    assert str(info.value) == "no such file: src/nope.py"


def test_directories_are_not_files(ws: Workspace) -> None:
    (ws.root / "d").mkdir()
    with pytest.raises(IsADirectoryError, match="d is a directory"):
        ws.read_file("d")
    with pytest.raises(IsADirectoryError):
        ws.write_file("d", "x")
    ws.write_file("f.txt", "x")
    with pytest.raises(NotADirectoryError, match=r"f\.txt is a file"):
        ws.list_dir("f.txt")
    with pytest.raises(FileNotFoundError, match="no such directory: gone"):
        ws.list_dir("gone")


def test_list_dir_sorts_and_marks_directories(ws: Workspace) -> None:
    assert ws.list_dir() == "(empty directory)"
    for name in ("b.txt", "a.txt", "src/x.py", "docs/readme.md"):
        ws.write_file(name, "")
    assert ws.list_dir() == "a.txt\nb.txt\ndocs/\nsrc/"
    assert ws.list_dir("src") == "x.py"


def test_an_absolute_path_inside_the_root_is_allowed(ws: Workspace) -> None:
    ws.write_file("a.txt", "hi")
    assert ws.read_file(str(ws.root / "a.txt")) == "hi"


ESCAPES = ["../outside/secret.txt", "src/../../outside/secret.txt", "{abs}", "link/secret.txt"]


@pytest.mark.parametrize("path", ESCAPES)
def test_paths_outside_the_root_are_refused(ws: Workspace, path: str) -> None:
    outside = ws.root.parent / "outside"
    (ws.root / "link").symlink_to(outside)
    path = path.format(abs=outside / "secret.txt")
    calls: list[Callable[[], str]] = [
        lambda: ws.read_file(path),
        lambda: ws.write_file(path, "pwned"),
        lambda: ws.list_dir(str(Path(path).parent)),
    ]
    for call in calls:
        with pytest.raises(PermissionError, match="resolves outside the workdir"):
            call()
    assert (outside / "secret.txt").read_text() == "secret"


def test_a_dangling_symlink_out_of_the_root_is_refused(ws: Workspace) -> None:
    target = ws.root.parent / "outside" / "new.txt"
    (ws.root / "new.txt").symlink_to(target)
    with pytest.raises(PermissionError):
        ws.write_file("new.txt", "pwned")
    assert not target.exists()


def test_list_dir_of_the_parent_is_refused(ws: Workspace) -> None:
    with pytest.raises(PermissionError):
        ws.list_dir("..")


def test_the_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not a directory"):
        Workspace(tmp_path / "missing")


# run_command -------------------------------------------------------------------------------------


def test_run_command_returns_the_exit_code_and_both_streams(ws: Workspace) -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(2)"
    result = ws.run_command(f"{PY} -c {shlex.quote(code)}")
    first, _, output = result.partition("\n")
    assert first == "exit code 2"
    assert "out" in output
    assert "err" in output


def test_run_command_runs_in_the_root(ws: Workspace) -> None:
    result = ws.run_command(f"{PY} -c 'import os; print(os.getcwd())'")
    assert result == f"exit code 0\n{ws.root}\n"


@pytest.mark.parametrize(
    "injection",
    ["; touch pwned", "&& touch pwned", "| touch pwned", "$(touch pwned)", "`touch pwned`"],
)
def test_shell_syntax_is_just_arguments(ws: Workspace, injection: str) -> None:
    result = ws.run_command(f"{PY} -c 'import sys; print(sys.argv[1:])' hello {injection}")
    assert result.startswith("exit code 0\n")
    assert str(["hello", *shlex.split(injection)]) in result
    assert not (ws.root / "pwned").exists()


def test_run_command_times_out_and_says_so(ws: Workspace) -> None:
    started = time.monotonic()
    result = ws.run_command(
        f"{PY} -c 'print(\"begun\", flush=True); import time; time.sleep(60)'", 1
    )
    assert time.monotonic() - started < 20
    assert result.startswith("timed out after 1s; the process was killed\n")
    assert "begun" in result


def test_run_command_caps_output_keeping_head_and_tail(ws: Workspace) -> None:
    code = "import sys; sys.stdout.write('HEAD' + 'x' * 100_000 + 'TAIL')"
    result = ws.run_command(f"{PY} -c {shlex.quote(code)}")
    output = result.partition("\n")[2]
    assert len(output.encode()) <= COMMAND_OUTPUT_CAP
    assert output.startswith("HEAD")
    assert output.endswith("TAIL")
    assert "bytes omitted ...]" in output


def test_small_output_is_not_capped(ws: Workspace) -> None:
    result = ws.run_command(f"{PY} -c 'print(\"x\" * 1000)'")
    assert result == "exit code 0\n" + "x" * 1000 + "\n"


@pytest.mark.parametrize(
    ("command", "error", "message"),
    [
        ("", ValueError, "the command is empty"),
        ("   ", ValueError, "the command is empty"),
        ("echo 'unclosed", ValueError, "cannot split the command"),
        ("no-such-program-donegate --x", FileNotFoundError, "command not found"),
    ],
)
def test_unusable_commands_raise(
    ws: Workspace, command: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ws.run_command(command)


def test_a_non_positive_timeout_is_refused(ws: Workspace) -> None:
    with pytest.raises(ValueError, match="timeout must be positive"):
        ws.run_command("true", 0)


def test_read_file_cuts_at_max_read_bytes_and_says_so(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, max_read_bytes=2048)
    (tmp_path / "exact.txt").write_bytes(b"a" * 2048)
    assert ws.read_file("exact.txt") == "a" * 2048
    (tmp_path / "over.txt").write_bytes("é".encode() * 2000)  # 4000 bytes, cut mid-character
    text = ws.read_file("over.txt")
    assert len(text.encode()) <= 2048
    assert text.startswith("éé")
    assert "\ufffd" not in text
    assert (
        "[truncated: this is the first part of 4000 bytes; read_file returns at most 2048" in text
    )


def test_built_in_tool_schemas_are_computed_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from donegate.harness.checklist import Checklist
    from donegate.harness.spec import TaskSpec
    from donegate.harness.task_tools import build_tools
    from donegate.messages import ToolCall
    from donegate.tools import Tool

    spec = TaskSpec.model_validate(
        {"id": "t", "prompt": "p", "closure": "model",
         "tools": ["read_file", "write_file", "list_dir", "run_command", "update_checklist"]}
    )  # fmt: skip
    build_tools(spec, tmp_path, Checklist())  # warm: the first task of the process pays
    made: list[str] = []
    real = Tool.from_function.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Tool], function: Callable[..., object], **kw: object) -> Tool:
        made.append(str(kw.get("name")))
        return real(cls, function, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(Tool, "from_function", classmethod(counting))
    roots = [tmp_path / "a", tmp_path / "b"]
    tools = []
    for root in roots:
        root.mkdir()
        (root / "f.txt").write_text(root.name)
        tools.append({t.name: t for t in build_tools(spec, root, Checklist())})
    assert made == []  # no schema derived again for a second and third task
    first, second = tools
    assert first["read_file"].parameters == second["read_file"].parameters
    assert first["write_file"].side_effect and not first["read_file"].side_effect
    call = ToolCall(id="c", name="read_file", arguments_raw='{"path":"f.txt"}',
                    arguments={"path": "f.txt"})  # fmt: skip
    # each task's tool is bound to its own workspace
    assert [t["read_file"].run_sync(call).content for t in tools] == ["a", "b"]
