"""CLI contracts of the completion gate: ``run``, ``verify``, ``hook claude-stop``, ``demo``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests._cli import donegate as in_process

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts" / "harness"
ENDPOINTS = ("users", "orders", "products", "carts", "payments", "invoices")


def donegate(
    *args: str, stdin: str | None = None, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Exit code, stdout and stderr of ``donegate ARGS`` in-process (no process start-up to pay;
    the real entry point's exit codes: tests/cli/test_bad_input.py's installed-entry-point test)."""
    return in_process(*args, input=stdin, cwd=cwd, env=env)


def task_file(root: Path, **fields: Any) -> Path:
    path = root / "task.yaml"
    path.write_text(yaml.safe_dump({"id": "t", "prompt": "Do it.", "workdir": ".", **fields}))
    return path


def migration(root: Path) -> Path:
    return task_file(
        root,
        id="migrate",
        checklist=[f"{e} endpoint" for e in ENDPOINTS],
        checks=[{"file_exists": f"api/{e}.py"} for e in ENDPOINTS],
        tools=["write_file", "update_checklist"],
    )


def test_run_done_prints_one_json_object_and_exits_0(tmp_path: Path) -> None:
    out = donegate(
        "run", str(migration(tmp_path)), "--model", f"script:{SCRIPTS / 'migration.yaml'}",
        "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert set(summary) >= {"status", "continuations", "model_calls", "checks", "certificate",
                            "escalation", "reason"}  # fmt: skip
    assert (summary["status"], summary["model_calls"], summary["continuations"]) == ("done", 6, 1)
    assert summary["checks"][0] == {
        "name": "file_exists: api/users.py", "passed": True, "detail": "api/users.py exists"
    }  # fmt: skip
    assert Path(summary["certificate"]).is_file() and summary["escalation"] is None
    # live progress went to stderr, the real tools ran (the script's stubs did not)
    assert "gate: not done" in out.stderr and "gate: accepted" in out.stderr
    assert (tmp_path / "api" / "invoices.py").read_text() == "ROUTE = '/v2/invoices'\n"

    verified = donegate("verify", summary["certificate"])
    assert verified.returncode == 0, verified.stdout + verified.stderr
    (tmp_path / "api" / "users.py").unlink()
    broken = donegate("verify", summary["certificate"], "--json")
    assert broken.returncode == 1
    assert json.loads(broken.stdout)["problems"] == [
        "file_exists: api/users.py: fails now (api/users.py does not exist)"
    ]


def test_run_escalated_exits_3_with_the_report(tmp_path: Path) -> None:
    task = task_file(
        tmp_path, id="stuck", checks=[{"file_contains": {"path": "report.txt", "text": "READY"}}],
        tools=["write_file"],
    )  # fmt: skip
    out = donegate("run", str(task), "--model", f"script:{SCRIPTS / 'stuck.yaml'}", "--json")
    assert out.returncode == 3, out.stderr
    summary = json.loads(out.stdout)
    assert (summary["status"], summary["model_calls"], summary["continuations"]) == (
        "escalated", 5, 3
    )  # fmt: skip
    assert summary["certificate"] is None
    assert summary["escalation"]["failed_checks"] == ["file_contains: report.txt has 'READY'"]
    assert Path(summary["escalation"]["markdown"]).read_text().startswith("# Escalated: stuck")


def test_run_failed_exits_4_with_the_loop_reason(tmp_path: Path) -> None:
    script = tmp_path / "refuses.yaml"
    script.write_text(yaml.safe_dump({"turns": [{"refusal": "No."}]}))  # the task gives the prompt
    task = task_file(tmp_path, closure="model")
    out = donegate("run", str(task), "--model", f"script:{script}", "--json")
    assert out.returncode == 4, out.stderr
    summary = json.loads(out.stdout)
    assert summary["status"] == "failed"
    assert summary["reason"] == "refused: the model refused"
    assert summary["model_calls"] == 1
    # the report docs/tasks.md promises for a failed run, where an escalated one goes
    report = Path(summary["escalation"]["markdown"])
    assert report.parent.name == "escalations" and report.is_file()
    assert "refused: the model refused" in report.read_text()


def test_run_prints_a_readable_result_without_json(tmp_path: Path) -> None:
    out = donegate("run", str(migration(tmp_path)), "--model",
                   f"script:{SCRIPTS / 'migration.yaml'}")  # fmt: skip
    assert out.returncode == 0
    assert out.stdout.startswith("done migrate: every gate passed")
    assert "model calls 6, continuations 1" in out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "missing.yaml", "--model", "script:x.yaml"], "cannot read the task file"),
        (["run", "task.yaml"], "no model"),
        (["run", "task.yaml", "--model", "nosuch:model"], "unknown model"),
        (["run", "task.yaml", "--model", "script:nope.yaml"], "no such script file"),
        (["run"], "Missing argument"),
    ],
)
def test_run_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    task_file(tmp_path, closure="model")
    out = donegate(*args, cwd=tmp_path)
    assert out.returncode == 2
    assert message in out.stderr


def test_verify_bad_input_exits_2(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}")
    assert donegate("verify", str(tmp_path / "x.json")).returncode == 2
    assert donegate("verify", str(tmp_path / "none.json")).returncode == 2


def test_hook_blocks_then_lets_the_stop_through(tmp_path: Path) -> None:
    task = task_file(tmp_path, checks=[{"file_exists": "done.txt"}], max_continuations=1)
    payload = {"session_id": "s", "transcript_path": None, "cwd": str(tmp_path)}
    env = {"DONEGATE_HOME": str(tmp_path / "home")}
    first = donegate("hook", "claude-stop", "--task", str(task), stdin=json.dumps(payload), env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {
        "decision": "block",
        "reason": "Not done yet: failed checks: file_exists: done.txt (done.txt does not "
        "exist). Continue, or state the blocker.",
    }
    again = {**payload, "stop_hook_active": True}
    second = donegate("hook", "claude-stop", "--task", str(task), stdin=json.dumps(again), env=env)
    assert second.returncode == 0 and second.stdout == ""
    assert "escalation report" in second.stderr


def test_hook_problems_block_and_exit_0(tmp_path: Path) -> None:
    task = task_file(tmp_path, closure="model")
    env = {"DONEGATE_HOME": str(tmp_path / "home")}
    out = donegate("hook", "claude-stop", "--task", str(task), stdin="not json", env=env)
    assert out.returncode == 0 and "not JSON" in out.stderr
    assert json.loads(out.stdout)["decision"] == "block"


def test_demo_runs_offline(tmp_path: Path) -> None:
    out = donegate("demo", "--dir", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "stopped after 3 model calls: 'Progress update: 2 of 3 done." in " ".join(
        out.stdout.split()
    )
    assert "gate: not done" in out.stdout and "gate: accepted" in out.stdout
    assert not (tmp_path / "gated" / ".donegate").exists()  # never in the agent's workdir
    [cert] = (tmp_path / "out" / "certificates").glob("*.certificate.json")
    data = json.loads(cert.read_text())
    assert (data["model_calls"], data["continuations"]) == (9, 2)
    assert data["models"]["worker"] == "anthropic:claude-opus-5-5"
    assert "FIXED" not in (tmp_path / "naive" / "stats.py").read_text()
    assert "(len(values) + 1)" in (tmp_path / "naive" / "stats.py").read_text()
    assert "(len(values) + 1)" not in (tmp_path / "gated" / "stats.py").read_text()
    assert donegate("verify", str(cert)).returncode == 0


def test_run_budget_flags_set_the_tasks_budget(tmp_path: Path) -> None:
    task = migration(tmp_path)
    model = f"script:{SCRIPTS / 'migration.yaml'}"
    out = donegate("run", str(task), "--model", model, "--budget-tokens", "1", "--json")
    assert out.returncode == 3, out.stderr
    summary = json.loads(out.stdout)
    assert (summary["status"], summary["model_calls"]) == ("escalated", 0)  # no call fits
    assert summary["reason"].startswith("budget exhausted: the next agent call needs ~")
    assert summary["spend"]["calls"] == 0 and summary["escalation"]["json"]
    unknown = task_file(tmp_path, closure="model", model="openai:no-such-model-xyz")
    out = donegate("run", str(unknown), "--budget-usd", "0.5")
    assert out.returncode == 2 and out.stdout == ""
    errors = [line for line in out.stderr.splitlines() if "warning:" not in line]  # preflight's
    assert len(errors) == 1, out.stderr
    assert "no price is known for model 'openai:no-such-model-xyz'" in errors[0]
