"""Key custody: no process the gate starts can read the signing key, not from the gate's
environ or memory (it is non-dumpable), not from its own environment, not as exec's agent CLI.

Honesty about root: a process with ``CAP_SYS_PTRACE`` reads any process's memory, dumpable or
not, and one with fewer capabilities than its target reads nothing of it either way. So when
the tests run as root, the gate itself runs with every capability dropped (``setpriv
--bounding-set -all --inh-caps -all``): the gate and the check reading it are then the same
user with the same (no) capabilities, as an ordinary user's gate and its children are, and only
the gate's dumpable flag decides whether the read succeeds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

import donegate

SRC = Path(donegate.__file__).resolve().parents[1]
KEY = "ed25519:" + "3c" * 32

READER = textwrap.dedent(
    """\
    import json, os, sys
    gate = os.getppid()
    seen = {}
    for name in ("environ", "mem"):
        try:
            with open(f"/proc/{gate}/{name}", "rb") as f:
                data = f.read(1 << 20) if name == "environ" else b""
            seen[name] = "read" + (" the key" if b"DONEGATE_SIGNING_KEY" in data else "")
        except OSError as exc:
            seen[name] = type(exc).__name__
    seen["own"] = sorted(k for k in os.environ if k.startswith("DONEGATE_SIGNING"))
    seen["gate"] = open(f"/proc/{gate}/cmdline", "rb").read().split(b"\\0")[:4]
    seen["gate"] = [a.decode() for a in seen["gate"]]
    with open(sys.argv[1], "w") as f:
        json.dump(seen, f)
    """
)


def _same_user_without_capabilities() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv (util-linux) is not installed")
    return [setpriv, "--bounding-set", "-all", "--inh-caps", "-all"]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DONEGATE_")}
    return {**base, "PYTHONPATH": str(SRC), "DONEGATE_HOME": str(tmp_path / "home"), **extra}


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc are Linux's")
def test_a_check_cannot_read_the_key_from_the_gate_s_environ_or_memory(tmp_path: Path) -> None:
    reader = tmp_path / "reader.py"
    reader.write_text(READER)
    seen = tmp_path / "seen.json"
    work = tmp_path / "work"
    work.mkdir()
    check = [sys.executable, str(reader), str(seen)]
    task = tmp_path / "task.yaml"
    task.write_text(yaml.safe_dump({"id": "peek", "prompt": "Say done.", "tools": [],
                                    "workdir": str(work), "checks": [{"run": check}]}))  # fmt: skip
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"prompt": "Say done.", "turns": [{"text": "Done."}]}))
    done = subprocess.run(
        [
            *_same_user_without_capabilities(),
            sys.executable,
            "-m",
            "donegate",
            "run",
            str(task),
            "--model",
            f"script:{script}",
        ],
        env=_env(tmp_path, DONEGATE_SIGNING_KEY=KEY),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(seen.read_text())
    assert found["gate"][1:3] == ["-m", "donegate"]  # the reader's parent is the gate itself
    assert found["own"] == []  # never passed down
    assert found["environ"] == "PermissionError"  # dumpable, this read the key
    assert found["mem"] == "PermissionError"


@pytest.mark.slow
def test_exec_gives_the_agent_cli_its_provider_key_and_none_of_the_gate_s(
    tmp_path: Path,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    dump = tmp_path / "work" / ".cli-env.json"  # in the workdir: the CLI's sandbox shows it
    cli = bin_dir / "claude"
    cli.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "if '--version' in sys.argv:\n"
        "    print('2.1.197 (Claude Code)'); sys.exit(0)\n"
        f"json.dump(dict(os.environ), open({str(dump)!r}, 'w'))\n"
        "print(json.dumps({'type': 'result', 'result': 'ok', 'is_error': False}))\n"
    )
    cli.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    task = tmp_path / "task.yaml"
    task.write_text(yaml.safe_dump({"id": "e", "prompt": "p", "workdir": str(work),
                                    "checks": [{"file_exists": "x"}],
                                    "secret": ["SHOP_DB_PASSWORD"]}))  # fmt: skip
    env = _env(
        tmp_path,
        DONEGATE_SIGNING_KEY=KEY,
        DONEGATE_SERVE_TOKEN="alice:s3cret-token-123456",
        ANTHROPIC_API_KEY="sk-ant-for-the-cli",
        SHOP_DB_PASSWORD="hunter2",
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        HOME=str(tmp_path),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "donegate", "exec", "--task", str(task), "--", "claude", "-p", "x"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dump.is_file(), proc.stderr[-2000:]
    got = json.loads(dump.read_text())
    assert got["ANTHROPIC_API_KEY"] == "sk-ant-for-the-cli"
    leaked = {"DONEGATE_SIGNING_KEY", "DONEGATE_SERVE_TOKEN", "SHOP_DB_PASSWORD"} & set(got)
    assert leaked == set()
