"""Every example in docs/*.md runs, offline, and prints what the page shows.

The conventions a page follows (each page runs in its own fresh temporary directory, with
``DONEGATE_HOME`` pointing inside it, no API keys and no ``COLUMNS`` in the environment):

* a fence with a file name, such as ```` ```yaml title="task.yaml" ````, writes its text to that
  file (relative to the page's directory) when the walk reaches it; later blocks use the file;
* a ```` ```python ```` block runs, in page order, in one namespace per page; when the next block
  (with only blank lines between) is a bare ```` ``` ```` fence, that fence is the block's expected
  standard output;
* a ```` ```console ````, ```` ```bash ```` or ```` ```sh ```` block with lines starting ``$ `` runs
  each such command in a shell (a line ending in ``\\`` continues it) and compares the command's
  standard output with the lines up to the next ``$ ``; stderr is not compared (write ``2>&1``
  to show it). A command must exit 0: show a failure with ``; echo "exit $?"``. A shell block
  with no ``$ `` line is an illustration and does not run;
* in expected output, a line that is only ``...`` stands for any number of lines, and ``...``
  inside a line for any text in that line (temporary paths, timestamps, durations);
* every other fence (```` ```text ````, ```` ```yaml ```` without a title, a bare fence not after
  a python block) is an illustration;
* a page holding ``<!-- doc-test: cwd=repo -->`` runs from the repository root instead of a
  temporary directory (for pages that use the repository's own example scripts).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
SHELLS = {"console", "bash", "sh", "shell"}
REPO_CWD = "<!-- doc-test: cwd=repo -->"
# Variables that could reach a real provider or change the output's width: never inherited.
SCRUBBED = ("COLUMNS", "LINES", "DONEGATE_DB", "DONEGATE_BROKER", "DONEGATE_SIGNING_KEY")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its title (a file name), its text and first line."""

    lang: str
    title: str | None
    text: str
    line: int


def parse_blocks(text: str) -> list[Block]:
    """The page's fenced blocks, in order (top-level fences only)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^```(\S*)(.*)$", lines[i])
        if opening is None:
            i += 1
            continue
        title = re.search(r'title="([^"]+)"', opening.group(2))
        start = i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        blocks.append(
            Block(
                opening.group(1),
                title.group(1) if title else None,
                "\n".join(body) + "\n",
                start + 1,
            )
        )
        i += 1
    return blocks


def _follows(text: str, first: Block, second: Block) -> bool:
    """Whether only blank lines separate `first`'s closing fence from `second`."""
    lines = text.splitlines()
    end = first.line + first.text.count("\n")  # index of the closing fence line
    return all(not line.strip() for line in lines[end + 1 : second.line - 1])


def matches(expected: str, actual: str) -> bool:
    """`actual` fits `expected`, where ``...`` is a wildcard (a whole line: any lines)."""
    pattern = ""
    for line in expected.rstrip("\n").splitlines():
        if line.strip() == "...":
            pattern += r"(?:[^\n]*\n)*?"
        else:
            pattern += re.escape(line.rstrip()).replace(r"\.\.\.", r"[^\n]*?") + r"[ \t]*\n"
    tidy = "".join(line.rstrip() + "\n" for line in actual.rstrip("\n").splitlines())
    return re.fullmatch(pattern, tidy) is not None


def shell_commands(block: Block) -> list[tuple[str, str]]:
    """``(command, expected output)`` pairs of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    lines = block.text.rstrip("\n").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("$ "):
            command = lines[i][2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1] + "\n" + lines[i]
            pairs.append((command, []))
        elif pairs:
            pairs[-1][1].append(lines[i])
        i += 1
    return [(c, "\n".join(out) + "\n" if out else "") for c, out in pairs]


def _env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in SCRUBBED and not k.endswith(("_API_KEY", "_AUTH_TOKEN", "_BASE_URL"))
    }
    env["DONEGATE_HOME"] = str(home)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_page(doc: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Run every executable block of `doc`; returns how many ran. Fails on the first misfit."""
    saved = dict(os.environ)  # a page's Python may set variables: none outlives the page
    try:
        return _run_page(doc, tmp, monkeypatch)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _run_page(doc: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    text = doc.read_text(encoding="utf-8")
    cwd = ROOT if REPO_CWD in text else tmp / "work"
    cwd.mkdir(exist_ok=True)
    env = _env(tmp / "home")
    for key in list(os.environ):
        if key not in env:
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(cwd)
    blocks = parse_blocks(text)
    namespace: dict[str, object] = {"__name__": f"docs_{doc.stem}"}
    ran = 0
    for n, block in enumerate(blocks):
        where = f"{doc.name}:{block.line}"
        if block.title is not None:
            target = cwd / block.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text, encoding="utf-8")
        if block.lang == "python":
            shown = blocks[n + 1] if n + 1 < len(blocks) else None
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(compile(block.text, where, "exec"), namespace)
            if shown is not None and shown.lang == "" and _follows(text, block, shown):
                assert matches(shown.text, printed.getvalue()), (
                    f"{where}: printed\n{printed.getvalue()}\nbut the page shows\n{shown.text}"
                )
            ran += 1
        elif block.lang in SHELLS:
            for command, expected in shell_commands(block):
                out = subprocess.run(
                    ["bash", "-c", command],
                    cwd=cwd,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=60,
                    check=False,
                )
                assert out.returncode == 0, (
                    f"{where}: `{command}` exited {out.returncode}\n{out.stdout}{out.stderr}"
                )
                assert matches(expected, out.stdout), (
                    f"{where}: `{command}` printed\n{out.stdout}\nbut the page shows\n{expected}"
                )
                ran += 1
    return ran


# A page whose examples all slipped into illustration fences would pass vacuously: these must run
# at least two each.
USER_PAGES = ("tasks.md", "models.md", "config.md", "testing.md")


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_example_on_the_page_runs_as_shown(
    doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = run_page(doc, tmp_path, monkeypatch)
    if doc.name in USER_PAGES:
        assert ran >= 2, doc.name


def test_the_user_pages_have_examples_that_run() -> None:
    # The test above runs each user page once and counts its examples (running them a second time
    # here cost a third of this folder's time); here, that every user page is among those it runs.
    assert set(USER_PAGES) <= {d.name for d in DOCS}


def test_the_conventions_catch_a_wrong_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "wrong.md"
    doc.write_text('```text title="a.txt"\nhi\n```\n\n```console\n$ cat a.txt\nho\n```\n')
    with pytest.raises(AssertionError, match="printed"):
        run_page(doc, tmp_path, monkeypatch)
    doc.write_text("```console\n$ false\n```\n")
    with pytest.raises(AssertionError, match="exited 1"):
        run_page(doc, tmp_path, monkeypatch)
    doc.write_text('```python\nprint("a")\n```\n\n```\nb\n```\n')
    with pytest.raises(AssertionError, match="printed"):
        run_page(doc, tmp_path, monkeypatch)


def test_the_wildcards() -> None:
    assert matches("a\n...\nz\n", "a\nb\nc\nz\n")
    assert matches("a\n...\nz\n", "a\nz\n")
    assert matches("path /tmp/.../x.json\n", "path /tmp/abc/def/x.json\n")
    assert not matches("a\nz\n", "a\nb\nz\n")
    assert not matches("path /tmp/.../x.json\n", "path /tmp/abc\n/x.json\n")


def _generator() -> dict[str, object]:
    return runpy.run_path(str(ROOT / "scripts" / "gen-cli-docs"), run_name="gen_cli_docs")


def test_the_cli_page_is_generated_from_the_commands_help() -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    render = _generator()["render"]
    assert callable(render)
    assert page == render(), "docs/cli.md is out of date: run scripts/gen-cli-docs"


def test_the_cli_page_shows_what_the_commands_print() -> None:
    # The generator renders help itself; a user's terminal must see the same text.
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    shown = dict(re.findall(r"```text\n\$ (donegate[\w -]*?) --help\n(.*?)```", page, re.S))
    listed = subprocess.run(
        [sys.executable, "-m", "donegate", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        check=True,
    ).stdout
    commands = re.findall(r"^  (\w[\w-]*)  ", listed.partition("Commands:")[2], re.M)
    assert commands and all(f"donegate {c}" in shown for c in commands)
    assert shown["donegate"] == listed
    for path in ("donegate run", "donegate tasks show"):
        out = subprocess.run(
            [sys.executable, "-m", "donegate", *path.split()[1:], "--help"],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "80"},
            check=True,
        ).stdout
        assert shown[path] == out, path


def test_the_generator_check_mode_sees_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generator = _generator()
    stale = tmp_path / "cli.md"
    stale.write_text("# an old page\n", encoding="utf-8")
    main = generator["main"]
    assert callable(main)
    monkeypatch.setitem(main.__globals__, "PAGE", stale)
    assert main(["--check"]) == 1
    assert main([]) == 0
    assert main(["--check"]) == 0


def test_the_readme_command_table_lists_every_command_and_links_the_pages() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.partition("## Command line")[2].partition("\n## ")[0]
    rows = re.findall(r"^\| `donegate ([\w-]+)", table, re.M)
    listed = subprocess.run(
        [sys.executable, "-m", "donegate", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        check=True,
    ).stdout
    commands = re.findall(r"^  (\w[\w-]*)  ", listed.partition("Commands:")[2], re.M)
    assert commands
    assert [c for c in commands if c not in rows] == []
    for page in ("cli", "tasks", "models", "config", "worker", "certificates", "testing"):
        assert f"(docs/{page}.md)" in table, page
