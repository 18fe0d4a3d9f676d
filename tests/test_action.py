"""``action.yml`` run as a GitHub runner runs a composite Action, offline.

`run_action` reads the Action, resolves each step's ``${{ }}`` expressions (inputs, earlier
steps' outputs, ``always()``), runs each ``run:`` step with ``bash --noprofile --norc -eo
pipefail`` and fresh ``GITHUB_OUTPUT`` / ``GITHUB_STEP_SUMMARY`` / ``GITHUB_ENV`` files, applies
``GITHUB_ENV`` to the later steps, skips a step after a failure unless its ``if:`` says
``always()``, and records a ``uses:`` step with its resolved inputs instead of running it. The
agents are shell scripts (``agent: command``), so no network is needed; donegate is the one
already importable (``donegate-version: installed``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
SRC = ROOT / "src"

HALF_AGENT = """#!/bin/sh
if [ ! -f a.txt ]; then echo a > a.txt; echo "Progress: a.txt written."
else echo b > b.txt; echo "Both files written, all done."; fi
"""
STUCK_AGENT = """#!/bin/sh
echo "I am done (I am not)."
"""


@dataclass
class ActionRun:
    """What a runner would show for one use of the Action."""

    exit_code: int
    outputs: dict[str, str]
    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    """Each step's outputs, by id."""
    ran: list[str] = field(default_factory=list)
    """The steps run (``uses:`` steps recorded, not run), by name."""
    uses: dict[str, dict[str, str]] = field(default_factory=dict)
    """Each ``uses:`` step reached, its resolved ``with:``."""
    summary: str = ""
    log: str = ""


def parse_output_file(text: str) -> dict[str, str]:
    """GitHub's ``name=value`` and ``name<<DELIMITER`` forms."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            out[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
            i += 1
        else:
            raise AssertionError(f"not an output line: {line!r}")
    return out


def evaluate(expr: str, ctx: dict[str, Any], failed: bool) -> Any:
    """The subset of GitHub's expression language action.yml uses."""
    tokens = re.findall(r"'(?:[^']|'')*'|==|!=|&&|\|\||always\(\)|success\(\)|[\w.-]+", expr)
    values: list[Any] = []
    ops: list[str] = []
    for token in tokens:
        if token in ("==", "!=", "&&", "||"):
            ops.append(token)
            continue
        if token.startswith("'"):
            value: Any = token[1:-1].replace("''", "'")
        elif token == "always()":
            value = True
        elif token == "success()":
            value = not failed
        else:
            value = ctx
            for part in token.split("."):
                value = value.get(part, "") if isinstance(value, dict) else ""
        values.append(value)
    # comparisons bind tighter than && and ||
    i = 0
    while i < len(ops):
        if ops[i] in ("==", "!="):
            a, b = values[i], values[i + 1]
            values[i : i + 2] = [(str(a) == str(b)) == (ops[i] == "==")]
            del ops[i]
        else:
            i += 1
    result = values[0]
    for op, value in zip(ops, values[1:], strict=True):
        result = (bool(result) and bool(value)) if op == "&&" else (bool(result) or bool(value))
    return result


def substitute(text: str, ctx: dict[str, Any], failed: bool) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(evaluate(m.group(1), ctx, failed)), text)


def run_action(inputs: dict[str, str], *, cwd: Path, tmp: Path, path: str) -> ActionRun:
    """Run action.yml's steps as a runner would; `inputs` as a workflow's ``with:``."""
    action = yaml.safe_load(ACTION.read_text())
    declared = action["inputs"]
    unknown = set(inputs) - set(declared)
    assert not unknown, f"not inputs of action.yml: {unknown}"
    values = {k: inputs.get(k, str(spec.get("default", ""))) for k, spec in declared.items()}
    ctx: dict[str, Any] = {"inputs": values, "steps": {}}
    env_extra: dict[str, str] = {}
    run = ActionRun(exit_code=0, outputs={})
    failed = False
    for n, step in enumerate(action["runs"]["steps"]):
        condition = str(step.get("if", "success()"))
        condition = condition.strip().removeprefix("${{").removesuffix("}}")
        if "always()" not in condition and failed:
            continue
        if not evaluate(condition, ctx, failed):
            continue
        run.ran.append(step["name"])
        if "uses" in step:
            resolved = {k: substitute(str(v), ctx, failed) for k, v in step["with"].items()}
            run.uses[step["uses"]] = resolved
            continue
        files = {name: tmp / f"step{n}-{name}" for name in ("output", "summary", "env")}
        for file in files.values():
            file.write_text("")
        script = tmp / f"step{n}.sh"
        script.write_text(step["run"])
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
            "PATH": path,
            "PYTHONPATH": str(SRC),
            "RUNNER_TEMP": str(tmp),
            **env_extra,
            **{k: substitute(str(v), ctx, failed) for k, v in step.get("env", {}).items()},
            "GITHUB_OUTPUT": str(files["output"]),
            "GITHUB_STEP_SUMMARY": str(files["summary"]),
            "GITHUB_ENV": str(files["env"]),
        }
        assert step["shell"] == "bash"
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=180)  # fmt: skip
        run.log += proc.stdout + proc.stderr
        env_extra.update(parse_output_file(files["env"].read_text()))
        outputs = parse_output_file(files["output"].read_text())
        if "id" in step:
            ctx["steps"][step["id"]] = {"outputs": outputs}
            run.steps[step["id"]] = outputs
        run.summary += files["summary"].read_text()
        if proc.returncode != 0:
            failed = True
            run.exit_code = proc.returncode
    run.outputs = {k: substitute(v["value"], ctx, failed) for k, v in action["outputs"].items()}
    return run


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A workdir, a task (a.txt and b.txt), script agents and a ``donegate`` on PATH."""
    home = tmp_path / "donegate-home"
    monkeypatch.setenv("DONEGATE_HOME", str(home))
    work, bin_dir, runner = tmp_path / "work", tmp_path / "bin", tmp_path / "runner"
    for folder in (work, bin_dir, runner):
        folder.mkdir()
    task = tmp_path / "task.yaml"
    b_check = {"run": ["sh", "-c", "echo looking for b.txt; test -f b.txt"], "name": "b exists"}
    task.write_text(yaml.safe_dump({"id": "ab", "prompt": "Write a.txt and b.txt.",
                                    "checks": [{"file_exists": "a.txt"}, b_check],
                                    "max_continuations": 2}))  # fmt: skip
    shim = f'#!/bin/sh\nexec {sys.executable} -m donegate "$@"\n'
    for name, text in (
        ("half-agent", HALF_AGENT),
        ("stuck-agent", STUCK_AGENT),
        ("donegate", shim),
    ):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return {"work": work, "bin": bin_dir, "runner": runner, "task": task, "home": home}


def act(world: dict[str, Path], **inputs: str) -> ActionRun:
    inputs = {"task": str(world["task"]), "agent": "command", "donegate-version": "installed",
              **inputs}  # fmt: skip
    path = f"{world['bin']}{os.pathsep}{os.environ['PATH']}"
    return run_action(inputs, cwd=world["work"], tmp=world["runner"], path=path)


@pytest.mark.slow
def test_done_run_outputs_summary_and_attestation(world: dict[str, Path]) -> None:
    run = act(world, args="half-agent", resume="half-agent {reason}", attest="true")
    assert run.exit_code == 0, run.log
    out = run.outputs
    assert (out["status"], out["exit-code"], out["continuations"]) == ("done", "0", "1")
    assert (out["checks-passed"], out["checks-failed"]) == ("2", "0")
    assert Path(out["certificate"]).is_file() and out["escalation"] == ""
    # the summary: verdict, each check, the continuation's reason, the claim, the key id
    assert "## donegate: ab — ✅ done" in run.summary
    assert "| `file_exists: a.txt` | pass |" in run.summary
    assert "| `b exists` | pass |" in run.summary
    assert re.search(r"1\. Not done yet: failed checks: b exists", run.summary)
    assert "Both files written, all done." in run.summary
    cert = json.loads(Path(out["certificate"]).read_text())
    assert f"signed with key `{cert['signature']['key_id']}`" in run.summary
    # attest: the statement written, and actions/attest reached with its subjects and predicate
    statement = json.loads(Path(out["statement"]).read_text())
    assert statement["predicate"] == cert
    attest = run.uses["actions/attest@v2"]
    assert attest["predicate-type"] == statement["predicateType"]
    assert json.loads(Path(attest["predicate-path"]).read_text()) == cert
    checksums = Path(attest["subject-checksums"]).read_text().splitlines()
    assert sorted(checksums) == sorted(
        f"{s['digest']['sha256']}  {s['name']}" for s in statement["subject"]
    )
    assert {s["name"] for s in statement["subject"]} == {"a.txt", "b.txt"}


@pytest.mark.slow
def test_escalated_run(world: dict[str, Path]) -> None:
    run = act(world, args="stuck-agent", resume="stuck-agent {reason}", attest="true",
              **{"max-continuations": "2"})  # fmt: skip
    assert run.exit_code == 3, run.log
    out = run.outputs
    assert (out["status"], out["exit-code"], out["continuations"]) == ("escalated", "3", "2")
    assert (out["checks-passed"], out["checks-failed"]) == ("0", "2")
    assert out["certificate"] == "" and Path(out["escalation"]).is_file()
    assert "Write the in-toto statement" not in run.ran and not run.uses
    assert "## donegate: ab — ⚠️ escalated" in run.summary
    assert "| `file_exists: a.txt` | **FAIL** |" in run.summary
    assert run.summary.count("Not done yet:") >= 2
    assert "2. Not done yet" in run.summary and "3. Not done yet" not in run.summary


@pytest.mark.slow
def test_failed_run(world: dict[str, Path]) -> None:
    run = act(world, args="half-agent")
    assert run.exit_code == 4, run.log
    out = run.outputs
    assert (out["status"], out["exit-code"], out["continuations"]) == ("failed", "4", "0")
    assert (out["checks-passed"], out["checks-failed"]) == ("1", "1")
    assert out["certificate"] == "" and out["escalation"] == ""
    assert "## donegate: ab — ❌ failed" in run.summary
    # the failing check's output, under its name
    assert "<summary>FAIL: b exists</summary>\n\n```text\nlooking for b.txt\n```" in run.summary


@pytest.mark.slow
@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"agent": "cursor", "args": "x"}, "agent: 'cursor' is not one of"),
        ({"args": "half-agent 'open"}, "args: cannot split"),
        ({"args": ""}, "args: agent command needs the program"),
    ],
)
def test_bad_inputs_fail_the_step_with_exit_2(
    inputs: dict[str, str], message: str, world: dict[str, Path]
) -> None:
    run = act(world, **inputs)
    assert run.exit_code == 2
    assert message in run.log
    assert run.outputs["status"] == "error" and run.outputs["exit-code"] == "2"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("version", "requirement"),
    [("1.4.0", "donegate==1.4.0"), ("", "donegate"), ("./", "./")],
)
def test_install_step_pip_installs_the_version_asked(
    version: str, requirement: str, tmp_path: Path
) -> None:
    """The install step alone, with a stub ``python3`` that records what pip was asked."""
    bin_dir, log = tmp_path / "bin", tmp_path / "pip.log"
    bin_dir.mkdir()
    stub = f"""#!/bin/sh
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/sh\\necho "$@" >> {log}\\n' > "$3/bin/python"
  printf '#!/bin/sh\\necho donegate 9.9\\n' > "$3/bin/donegate"
  chmod +x "$3/bin/python" "$3/bin/donegate"
fi
"""
    (bin_dir / "python3").write_text(stub)
    (bin_dir / "python3").chmod(0o755)
    action = yaml.safe_load(ACTION.read_text())
    install = action["runs"]["steps"][0]
    script, env_file = tmp_path / "install.sh", tmp_path / "env"
    script.write_text(install["run"])
    env_file.write_text("")
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path),
           "GITHUB_ENV": str(env_file), "INPUT_DONEGATE_VERSION": version}  # fmt: skip
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert log.read_text().split() == [
        "-m", "pip", "install", "--quiet", "--disable-pip-version-check", requirement
    ]  # fmt: skip
    bin_line = parse_output_file(env_file.read_text())["DONEGATE_BIN"]
    assert bin_line == f"{tmp_path}/donegate-venv/bin/donegate"
    assert "donegate 9.9" in proc.stdout


def test_outputs_declared_are_the_ones_exec_writes() -> None:
    from donegate.harness.agents.ci import OUTPUT_NAMES

    outputs = yaml.safe_load(ACTION.read_text())["outputs"]
    for name in OUTPUT_NAMES:
        assert outputs[name]["value"] == f"${{{{ steps.run.outputs.{name} }}}}"
