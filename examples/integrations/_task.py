"""The task every example agent is gated on: done when audit_work.txt exists in the cwd."""

import os
import subprocess

from donegate import TaskSpec


def task(prompt: str) -> TaskSpec:
    """`donegate audit`'s prompt, checked by one file check; two continuations."""
    return TaskSpec(
        id="audit",
        prompt=prompt,
        workdir=os.getcwd(),
        checks=[{"file_exists": "audit_work.txt"}],  # type: ignore[list-item]
        max_continuations=2,
    )


def bash(command: str) -> str:
    """Run a shell command in the working directory."""
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr
