"""Bad input to every command: one line on stderr, exit 2, no traceback, nothing stored changed.

Each case feeds one command one kind of input a user, a script or an agent can hand it: files
that are not UTF-8, nested 5,000 deep, alias bombs, 50 MB, ids of 100,000 characters; ``--db``
naming a file that is not SQLite or a folder that does not exist; ports, counts and windows out
of range; models whose API key is not set. Before and after each case the whole test folder
(the store, ``$DONEGATE_HOME``, the current directory) is snapshotted: nothing may be created,
changed or removed by a refused command.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from donegate.cli import app, main
from donegate.store.sql import open_store
from donegate.worker import submit
from tests._cli import donegate

KEY_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
)
LONG_ID = "a" * 100_000


def _nested_flow(depth: int) -> str:
    return "[" * depth + "]" * depth


def _bad_files(root: Path) -> None:
    """Bad task, script and certificate files, each named by the kind of badness."""
    task = "id: t\nprompt: p\n"
    (root / "nonutf8.yaml").write_bytes(b"id: t\nprompt: caf\xe9 \xff\n")
    (root / "nonutf8.json").write_bytes(b'{"id": "t", "prompt": "\xff"}')
    (root / "deep_flow.yaml").write_text(task + "checks: " + _nested_flow(5000) + "\n")
    (root / "deep_block.yaml").write_text(task + "checks:\n  " + "- " * 5000 + "x\n")
    (root / "deep.json").write_text(
        '{"id": "t", "prompt": "p", "checks": ' + _nested_flow(5000) + "}"
    )
    laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10)
    )
    (root / "laughs.yaml").write_text(task + laughs)
    with (root / "huge.yaml").open("wb") as f:  # 50 MB, sparse: refused before it is read
        f.truncate(50 * 2**20)
    for name, size in (("huge.json", 50 * 2**20), ("huge70.json", 70 * 2**20)):
        (root / name).write_bytes(b"")
        os.truncate(root / name, size)
    (root / "long_id.yaml").write_text(f"id: {LONG_ID}\nprompt: p\nmodel: script:script.yaml\n")
    (root / "bad_id.yaml").write_text("id: a b/c\nprompt: p\nmodel: script:script.yaml\n")
    (root / "dup_key.yaml").write_text("id: t\nprompt: p\nchecks: []\nchecks: [{run: 'true'}]\n")
    (root / "folder.yaml").mkdir()
    (root / "notdb.db").write_text("this is a text file, not a database\n")
    (root / "folder.db").mkdir()


def _good_files(root: Path) -> None:
    """A script and two task files: one that submits, one with no model."""
    (root / "script.yaml").write_text(yaml.safe_dump({"prompt": "p", "turns": [{"text": "done"}]}))
    (root / "ok.yaml").write_text(
        yaml.safe_dump(
            {
                "id": "ok",
                "prompt": "p",
                "workdir": ".",
                "model": "script:script.yaml",
                "closure": "model",
            }
        )
    )
    (root / "nomodel.yaml").write_text(
        yaml.safe_dump({"id": "nm", "prompt": "p", "closure": "model"})
    )


@pytest.fixture(scope="module")
def store_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real store holding one submitted task, built once per module: migrating a fresh SQLite
    store costs each of this module's ~300 cases more than the command under test."""
    root = tmp_path_factory.mktemp("store") / "w"
    root.mkdir()
    _good_files(root)
    with pytest.MonkeyPatch.context() as m:
        m.setenv("DONEGATE_HOME", str(root.parent / "home"))
        store = open_store(root / "store.db")
        submit(root / "ok.yaml", store)
        store.close()
    left = sorted(p.name for p in root.glob("store.db*"))
    assert left == ["store.db", "store.db.lock"], left  # no WAL or journal left to copy
    return root / "store.db"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_file: Path) -> Iterator[Path]:
    """A folder with bad files, good ones, and a copy of a real store holding one task; the cwd."""
    root = tmp_path / "w"
    root.mkdir()
    _bad_files(root)
    _good_files(root)
    for name in ("store.db", "store.db.lock"):
        shutil.copyfile(store_file.with_name(name), root / name)
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("DONEGATE_DB", raising=False)
    monkeypatch.setenv("DONEGATE_HOME", str(root / "home"))  # must never be created
    monkeypatch.chdir(root)
    yield root


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every path under `root`: size, mtime, and a digest of the small files' bytes."""
    seen: dict[str, tuple[int, int, str]] = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        digest = ""
        if path.is_file() and st.st_size < 2**20:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        seen[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns, digest)
    return seen


def _run(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str, str]:
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


TASK_FILES = ("nonutf8.yaml", "deep_flow.yaml", "deep_block.yaml", "deep.json", "laughs.yaml",
              "huge.yaml", "long_id.yaml", "bad_id.yaml", "dup_key.yaml", "folder.yaml",
              "missing.yaml")  # fmt: skip
SCRIPT_FILES = ("nonutf8.yaml", "deep_flow.yaml", "deep_block.yaml", "deep.json", "laughs.yaml",
                "huge.yaml", "folder.yaml", "missing.yaml")  # fmt: skip
CERT_FILES = ("nonutf8.json", "deep.json", "huge.json", "folder.yaml", "missing.yaml")
# what a line about each file must say besides the file's name
SAYS = {
    "nonutf8.yaml": "not UTF-8",
    "nonutf8.json": "",
    "deep_flow.yaml": "nested deeper than 64",
    "deep_block.yaml": "nested deeper than 64",
    "deep.json": "nested",
    "laughs.yaml": "expands to more than",
    "huge.yaml": "too large",
    "huge.json": "",
    "long_id.yaml": "id: a task id has at most 128 characters",
    "bad_id.yaml": "id: a task id is letters",
    "dup_key.yaml": "duplicate key 'checks'",
    "folder.yaml": "",
    "missing.yaml": "",
}
STORE_USERS = (
    ["tasks", "list"],
    ["tasks", "show", "ok"],
    ["tasks", "retry", "ok"],
    ["tasks", "cancel", "ok"],
    ["escalations", "list"],
    ["escalations", "show", "1"],
    ["escalations", "show", "ok"],
    ["escalations", "resolve", "1", "--token-file", "t.token"],
    ["escalations", "approve", "1", "--by", "me", "--token-file", "t.token"],
    ["reviewers", "list"],
    ["reviewers", "remove", "ann", "--token-file", "t.token"],
    ["stats"],
    ["serve", "--port", "0"],
    ["outbox", "list"],
    ["outbox", "retry", "1"],
)


def _cases() -> Iterator[Any]:
    for name in TASK_FILES:
        says = (name, SAYS[name])
        yield pytest.param(["run", name, "--model", "script:script.yaml"], 2, says,
                           id=f"run-{name}")  # fmt: skip
        yield pytest.param(["submit", name, "--db", "store.db"], 2, says, id=f"submit-{name}")
        yield pytest.param(["hook", "install", "claude", "--task", name], 2, says,
                           id=f"hook-install-{name}")  # fmt: skip
        yield pytest.param(["exec", "--task", name, "--", "claude", "-p", "x"], 2, says,
                           id=f"exec-{name}")  # fmt: skip
        yield pytest.param(["check", name], 2, says, id=f"check-{name}")
        yield pytest.param(["validate", name], 2, says, id=f"validate-{name}")
    for name in SCRIPT_FILES:
        says = (name, SAYS[name])
        yield pytest.param(["replay", name], 2, says, id=f"replay-{name}")
        yield pytest.param(["emulate", name, "--port", "0"], 2, says, id=f"emulate-{name}")
        yield pytest.param(["run", "ok.yaml", "--model", f"script:{name}"], 2, says,
                           id=f"run-model-{name}")  # fmt: skip
        yield pytest.param(["run", "ok.yaml", "--verifier", f"script:{name}"], 2, says,
                           id=f"run-verifier-{name}")  # fmt: skip
    for name in CERT_FILES:
        yield pytest.param(["verify", name], 2, (name,), id=f"verify-{name}")
    yield pytest.param(["classify", "--api", "openai-chat", "nonutf8.json"], 2, ("nonutf8.json",),
                       id="classify-nonutf8")  # fmt: skip
    yield pytest.param(["classify", "--api", "openai-chat", "deep.json"], 2, ("deep.json",),
                       id="classify-deep")  # fmt: skip
    yield pytest.param(["classify", "--api", "openai-chat", "huge70.json"], 2,
                       ("huge70.json", "too large"), id="classify-huge")  # fmt: skip
    for args in STORE_USERS:
        name = "-".join(args)
        for db, says in (("notdb.db", "not a SQLite database"), ("folder.db", "not a regular"),
                         ("nodir/x.db", "no store at"), ("empty.db", "no store at")):  # fmt: skip
            yield pytest.param([*args, "--db", db], 2, (db.partition("/")[0], says),
                               id=f"{name}-{db}")  # fmt: skip
    for args in (["submit", "ok.yaml"], ["worker", "--until-idle"]):  # these may create a store
        name = "-".join(args)
        for db, says in (("notdb.db", "not a SQLite database"), ("folder.db", "not a regular")):
            yield pytest.param([*args, "--db", db], 2, (db, says), id=f"{name}-{db}")
    numbers = {
        ("classify", "--api", "openai-chat", "nonutf8.json", "--status"): ("-1", "70000", "nan"),
        ("replay", "script.yaml", "--max-steps"): ("0", "-1", "nan", "inf"),
        ("submit", "ok.yaml", "--db", "store.db", "--max-attempts"): ("0", "-1", "nan"),
        ("tasks", "list", "--db", "store.db", "--limit"): ("0", "-1", "nan"),
        ("stats", "--db", "store.db", "--since"): ("nan", "-1h", "0h", "inf", "9" * 400 + "w"),
        ("emulate", "script.yaml", "--port"): ("-1", "70000", "nan"),
        ("serve", "--db", "store.db", "--port"): ("-1", "70000", "nan"),
        ("audit", "--timeout"): ("0", "-1", "nan", "inf"),
        ("record", "--upstream", "http://127.0.0.1:9", "-o", "out.yaml", "--port"): (
            "-1",
            "70000",
        ),
    }
    for prefix, values in numbers.items():
        for value in values:
            option = prefix[-1]
            yield pytest.param([*prefix, value], 2, (option,),
                               id=f"{prefix[0]}{option}={value[:8]}")  # fmt: skip
    for bad_id in (LONG_ID, "a b", "../up", ""):
        label = f"{len(bad_id)}chars" if bad_id == LONG_ID else repr(bad_id)
        for args in (["tasks", "show"], ["tasks", "retry"], ["tasks", "cancel"],
                     ["escalations", "show"], ["escalations", "resolve"]):  # fmt: skip
            yield pytest.param([*args, bad_id, "--db", "store.db"], 2, ("ID",),
                               id=f"{'-'.join(args)}-{label}")  # fmt: skip
        yield pytest.param(["submit", "ok.yaml", "--id", bad_id, "--db", "store.db"], 2,
                           ("--id",), id=f"submit-id-{label}")  # fmt: skip
    keys = {
        "anthropic:claude-sonnet-4-5": "ANTHROPIC_API_KEY",
        "openai:gpt-4.1": "OPENAI_API_KEY",
        "openai-responses:o3": "OPENAI_API_KEY",
        "google:gemini-2.5-flash": "GEMINI_API_KEY or GOOGLE_API_KEY",
        "gemini:gemini-2.5-pro": "GEMINI_API_KEY or GOOGLE_API_KEY",
    }
    for model, var in keys.items():
        yield pytest.param(["run", "ok.yaml", "--model", model], 2, (model, var),
                           id=f"run-key-{model}")  # fmt: skip
        yield pytest.param(["run", "ok.yaml", "--verifier", model], 2, (model, var),
                           id=f"run-verifier-key-{model}")  # fmt: skip
    yield pytest.param(["demo", "--model", "anthropic:claude-sonnet-4-5"], 2,
                       ("ANTHROPIC_API_KEY",), id="demo-key")  # fmt: skip
    yield pytest.param(["submit", "nomodel.yaml", "--db", "store.db"], 2, ("nomodel.yaml", "model"),
                       id="submit-no-model")  # fmt: skip
    yield pytest.param(["submit", "ok.yaml", "--model", "haiku", "--db", "store.db"], 2,
                       ("model", "provider:model"), id="submit-bad-model")  # fmt: skip
    yield pytest.param(["run", "ok.yaml", "--workdir", "nowhere"], 2, ("workdir", "nowhere"),
                       id="run-no-workdir")  # fmt: skip
    yield pytest.param(["reviewers", "add", "no good", "--db", "store.db"], 2,
                       ("reviewer name 'no good'",), id="reviewers-add-bad-name")  # fmt: skip
    yield pytest.param(["escalations", "approve", "1", "--by", "me", "--db", "store.db"], 2,
                       ("needs a reviewer's secret", "--by me"), id="approve-by-alone")  # fmt: skip
    for path, says in (("missing.token", "cannot open"), ("home", "cannot open"),
                       (".", "not a regular file"), ("ok.yaml", "one line")):  # fmt: skip
        args = ["escalations", "resolve", "1", "--token-file", path, "--db", "store.db"]
        yield pytest.param(args, 2, ("--token-file", says), id=f"resolve-token-file-{path}")
    yield pytest.param(["serve", "--db", "store.db", "--host", "0.0.0.0"], 2,
                       ("--host", "not a loopback"), id="serve-no-token")  # fmt: skip
    yield pytest.param(["serve", "--db", "store.db", "--token", "ann:short"], 2,
                       ("--token", "shorter than 16"), id="serve-weak-token")  # fmt: skip
    for args in (["tasks", "list"], ["escalations", "list"], ["stats"]):  # the default store
        yield pytest.param(args, 2, ("no store at", "home"), id=f"{'-'.join(args)}-default-db")
    yield pytest.param(["submit", "ok.yaml", "--db", "store.db", "--broker", "notaurl"], 2,
                       ("--broker",), id="submit-bad-broker")  # fmt: skip
    yield pytest.param(["hook", "uninstall", "claude", "--task", "ok.yaml", "--dir", "nowhere"],
                       2, ("nowhere",), id="hook-uninstall-no-dir")  # fmt: skip
    yield pytest.param(["nosuch"], 2, ("nosuch",), id="unknown-command")
    yield pytest.param(["hook", "doctor", "nosuch"], 2, ("nosuch",), id="hook-doctor-unknown")
    for sub in ("init", "show", "export"):
        yield pytest.param(["key", sub, "--nosuch"], 2, ("--nosuch",), id=f"key-{sub}-option")
    yield pytest.param(["certificate", "export", "nosuch.json", "--in-toto"], 2,
                       ("nosuch.json",), id="certificate-export-missing")  # fmt: skip
    yield pytest.param(["init", "ok.yaml"], 2, ("ok.yaml",), id="init-onto-a-file")
    yield pytest.param(["tasks", "show"], 2, ("TASK_ID",), id="missing-argument")


CASES = list(_cases())


@pytest.mark.parametrize(("args", "code", "says"), CASES)
def test_bad_input_is_one_line_and_changes_nothing(
    world: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    says: tuple[str, ...],
) -> None:
    (world / "empty.db").touch()
    before = _snapshot(world)
    got, out, err = _run(capsys, args)
    assert (got, out) == (code, ""), err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for text in says:
        assert text in err, f"{text!r} not in {err!r}"
    assert len(err) < 600, err  # a 100,000-character id is not echoed back
    assert _snapshot(world) == before


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # every command, its module imported when lazy
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name)


def test_every_command_is_fed_bad_input() -> None:
    fed = {tuple(a for a in p.values[0][:2] if not a.startswith("-") and "." not in a)
           for p in CASES}  # fmt: skip
    fed |= {("hook", agent) for agent in HOOK_AGENTS}  # their own test, below: they block
    missing = [c for c in _commands(app) if not any(f[: len(c)] == c for f in fed)]
    assert not missing, f"no bad-input case for: {missing}"


# -- the real entry point, in a process of its own --------------------------------------------


def _donegate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env["DONEGATE_HOME"] = str(cwd / "home")
    return subprocess.run(
        [sys.executable, "-m", "donegate", *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=60,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["run", "huge.yaml"],
        ["submit", "long_id.yaml", "--db", "store.db"],
        ["tasks", "show", LONG_ID, "--db", "store.db"],
        ["replay", "deep_flow.yaml"],
        ["run", "ok.yaml", "--model", "anthropic:claude-sonnet-4-5"],
        ["tasks", "list", "--db", "nodir/x.db"],
    ],
    ids=["huge", "long-id-file", "long-id-arg", "deep", "no-key", "no-store"],
)
def test_the_installed_entry_point_refuses_in_one_line(world: Path, args: list[str]) -> None:
    before = _snapshot(world)
    done = _donegate(*args, cwd=world)  # the timeout is the hang guard
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert _snapshot(world) == before


# Ctrl-C as a terminal sends it: a test run started in the background of a shell without job
# control has SIGINT ignored, and a child would inherit that; SIGINT is restored before exec
_SIGINT_DEFAULT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


@pytest.mark.slow
def test_ctrl_c_exits_130(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"prompt": "wait", "turns": [{"text": "ok"}]}))
    (tmp_path / "t.yaml").write_text(
        yaml.safe_dump(
            {
                "id": "slow",
                "prompt": "wait",
                "workdir": ".",
                "checks": [{"run": [sys.executable, "-c", "import time; time.sleep(60)"]}],
            }
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", _SIGINT_DEFAULT,
         "-m", "donegate", "run", "t.yaml", "--model", "script:s.yaml"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "DONEGATE_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert proc.stderr is not None
    seen = [proc.stderr.readline()]
    while "step 1" not in seen[-1] and len(seen) < 5:  # after step 1 the check runs
        seen.append(proc.stderr.readline())
    assert "step 1" in seen[-1], seen
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "donegate: interrupted" and "Traceback" not in err


# -- agent hooks fail closed: a bad task file is a block naming it, never a traceback -----------

HOOK_PAYLOAD = '{"session_id": "bad-input", "cwd": "%s", "hook_event_name": "%s"}'
HOOK_AGENTS = ("claude", "claude-stop", "codex", "gemini")


def _hook(world: Path, agent: str, name: str) -> subprocess.CompletedProcess[str]:
    """The agent's hook in-process (an exception would escape, failing the test)."""
    event = "AfterAgent" if agent == "gemini" else "Stop"
    return donegate(
        "hook", agent, "--task", name, input=HOOK_PAYLOAD % (world, event), cwd=world,
        env={"DONEGATE_HOME": str(world.parent / "hook-home")},
    )  # fmt: skip


@pytest.mark.parametrize("agent", HOOK_AGENTS)
@pytest.mark.parametrize("name", ["nonutf8.yaml", "deep.json", "huge.yaml", "missing.yaml"])
def test_a_hook_given_a_bad_task_file_blocks_naming_it(world: Path, agent: str, name: str) -> None:
    out = _hook(world, agent, name)
    _blocks_naming(out, name)


@pytest.mark.slow
def test_a_hook_process_given_a_bad_task_file_blocks_naming_it(world: Path) -> None:
    # The agent CLIs start the hook as a process of its own: the same answer from the real one.
    out = subprocess.run(
        [sys.executable, "-m", "donegate", "hook", "claude", "--task", "nonutf8.yaml"],
        input=HOOK_PAYLOAD % (world, "Stop"), capture_output=True, text=True, cwd=world,
        timeout=60, env={**os.environ, "DONEGATE_HOME": str(world.parent / "hook-home")},
    )  # fmt: skip
    _blocks_naming(out, "nonutf8.yaml")


def _blocks_naming(out: subprocess.CompletedProcess[str], name: str) -> None:
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    decision = json.loads(out.stdout)
    assert decision["decision"] in {"block", "deny"}
    assert name in decision["reason"]
