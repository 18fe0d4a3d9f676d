"""``donegate verify CERT`` with no flags re-runs every check kind, ``python:`` checks beside
the task file included; a recorded file gone or changed is named with the hint to pass
``--task``; a check that cannot run on this machine is the environment (exit 4), not bad input.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from donegate.cli import main
from donegate.harness.certificate import load_certificate, write_certificate
from donegate.records.certificate import Certificate

CHECK = "def greets(workdir):\n    return 'Hello' in open(f'{workdir}/greet.py').read()\n"


def donegate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def certified(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """``init`` -> a ``python:`` check beside the task file -> ``run``: (task file, certificate)."""
    code, _, err = donegate(capsys, "init", str(tmp_path / "t"))
    assert code == 0, err
    task = tmp_path / "t" / "task.yaml"
    (tmp_path / "t" / "slug_checks.py").write_text(CHECK)
    data = yaml.safe_load(task.read_text())
    data["checks"].append({"python": "slug_checks:greets"})
    task.write_text(yaml.safe_dump(data))
    code, out, err = donegate(capsys, "run", str(task), "--json")
    assert code == 0, err
    return task, Path(json.loads(out)["certificate"])


def test_init_run_verify_with_no_flags_reruns_a_python_check(
    certified: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    task, cert = certified
    code, out, err = donegate(capsys, "verify", str(cert))
    assert code == 0, out + err
    assert out.startswith("verified ")
    recorded = load_certificate(cert)
    assert recorded.task_file is not None and recorded.task_file.path == str(task.resolve())
    assert recorded.check_path is not None and str(task.parent.resolve()) in recorded.check_path
    assert [Path(s.path).name for s in recorded.check_sources or ()] == ["slug_checks.py"]
    # the python check really runs again: break what it reads, and verify says so
    (tmp_path / "t" / "work" / "greet.py").write_text("def greet(name):\n    return name\n")
    code, out, _ = donegate(capsys, "verify", str(cert), "--json")
    assert code == 1
    assert any("python: slug_checks:greets: fails now" in p for p in json.loads(out)["problems"])


def test_a_gone_check_module_is_named_and_task_is_suggested(
    certified: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    task, cert = certified
    moved = tmp_path / "moved"
    (tmp_path / "t").rename(moved)
    code, out, _ = donegate(capsys, "verify", str(cert), "--json", "--workdir", str(moved / "work"))
    assert code == 1
    problems = json.loads(out)["problems"]
    assert f"the task file {task.resolve()} is gone; pass --task" in problems[0]
    assert any(f"the check module {task.parent.resolve() / 'slug_checks.py'} is gone" in p
               for p in problems)  # fmt: skip
    # the signature and digests still hold without re-running
    code, out, _ = donegate(capsys, "verify", str(cert), "--no-rerun")
    assert code == 0, out
    # and --task, where the task is now, re-runs it
    code, out, _ = donegate(capsys, "verify", str(cert), "--task", str(moved / "task.yaml"),
                            "--workdir", str(moved / "work"))  # fmt: skip
    assert code == 0, out


def test_a_changed_check_module_is_named(
    certified: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, cert = certified
    (tmp_path / "t" / "slug_checks.py").write_text(CHECK.replace("return", "return True or"))
    code, out, _ = donegate(capsys, "verify", str(cert), "--json")
    assert code == 1
    [problem] = json.loads(out)["problems"]
    assert "slug_checks.py changed since certification; pass --task" in problem


def test_a_check_that_cannot_run_here_is_the_environment_not_bad_input(
    certified: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, cert = certified
    # an older certificate's shape: the checks alone, no record of where their code is
    data = json.loads(cert.read_text())
    for key in ("task_file", "check_path", "check_sources"):
        data.pop(key)
    old = write_certificate(Certificate.from_data(data), cert.parent)
    code, out, err = donegate(capsys, "verify", str(old))
    assert (code, out) == (4, "")
    assert "cannot re-run a check on this machine" in err
    assert "no module named 'slug_checks'" in err and "--task" in err
    code, out, _ = donegate(capsys, "verify", str(old), "--json")
    assert code == 4 and "slug_checks" in json.loads(out)["environment"]
