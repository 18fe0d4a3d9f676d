"""What every framework's gate test shares: the task file, its workdir, the scripts, verify."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests._cli import donegate

SCRIPTS = Path(__file__).resolve().parent / "scripts"


@dataclass
class Task:
    """A task file whose one check is that ``done.txt`` exists in `work`."""

    file: Path
    work: Path

    def write(self, path: str, content: str) -> str:
        """The agent's one tool (each test wraps it in its framework's tool form)."""
        (self.work / path).write_text(content)
        return f"wrote {path}"


@pytest.fixture
def task(tmp_path: Path) -> Task:
    """A task: done when done.txt exists; two continuations; its workdir holds nothing yet."""
    work = tmp_path / "work"
    work.mkdir()
    spec = {
        "id": "write-done",
        "prompt": "Write done.txt, then say you are done.",
        "workdir": str(work),
        "checks": [{"file_exists": "done.txt"}],
        "max_continuations": 2,
    }
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(spec))
    return Task(file=path, work=work)


def verify(certificate: Path) -> subprocess.CompletedProcess[str]:
    """``donegate verify CERTIFICATE``, as a user runs it (in this process: only the exit code
    and the output are asserted)."""
    return donegate("verify", str(certificate))
