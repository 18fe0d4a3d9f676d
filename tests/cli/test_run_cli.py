"""CLI contracts of the completion gate: ``run``, ``verify``, ``hook claude-stop``, ``demo``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts" / "harness"
ENDPOINTS = ("users", "orders", "products", "carts", "payments", "invoices")


def donegate(
    *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "donegate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


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
    first = donegate("hook", "claude-stop", "--task", str(task), stdin=json.dumps(payload))
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {
        "decision": "block",
        "reason": "Not done yet: failed checks: file_exists: done.txt (done.txt does not "
        "exist). Continue, or state the blocker.",
    }
    again = {**payload, "stop_hook_active": True}
    second = donegate("hook", "claude-stop", "--task", str(task), stdin=json.dumps(again))
    assert second.returncode == 0 and second.stdout == ""
    assert "escalation report" in second.stderr


def test_hook_problems_exit_1_never_2(tmp_path: Path) -> None:
    task = task_file(tmp_path, closure="model")
    out = donegate("hook", "claude-stop", "--task", str(task), stdin="not json")
    assert out.returncode == 1 and "not JSON" in out.stderr


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
