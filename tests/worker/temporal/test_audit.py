"""`donegate audit` on the gated loop run as a Temporal workflow: no broken verdict.

The audited program (``audit_program.py``) runs `donegate.run` rounds behind the gate's
`GatedAgent` workflow on a real dev server; audit drives it once per scenario of the pack
through the official ``openai`` SDK against its emulator. Every scenario openai-chat can express
must be ``ok``: a cut, refused, filtered, empty or thinking-only ending never exits 0, a progress
report is continued, a recoverable fault is retried, and the cut call is never run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests._cli import donegate
from tests.worker.temporal.server import ADDRESS_ENV

pytestmark = pytest.mark.slow  # a dev server, and one program (and Temporal worker) per scenario

PROGRAM = Path(__file__).with_name("audit_program.py")


def test_gated_loop_as_a_workflow_shows_no_broken_verdict(
    tmp_path: Path, temporal_address: str
) -> None:
    env = {ADDRESS_ENV: temporal_address, "DONEGATE_HOME": str(tmp_path / "home")}
    proc = donegate(
        "audit", "--json", "--timeout", "120", "--workers", "2", "--",
        sys.executable, str(PROGRAM),
        env=env,
    )  # fmt: skip
    report = json.loads(proc.stdout)
    got = {s["name"]: s["verdict"] for s in report["scenarios"]}
    assert report["summary"]["api"] == "openai-chat", report["summary"]
    assert got.pop("paused_chain") == "skipped"  # pause_turn is Anthropic's alone
    assert set(got.values()) == {"ok"}, report["scenarios"]
    assert len(got) == 15 and proc.returncode == 0, proc.stderr
    # The gate's judge activity accepted each exit 0, and signed a certificate for each.
    accepted = [s["name"] for s in report["scenarios"] if s["exit_code"] == 0]
    certificates = list((tmp_path / "home").rglob("*.certificate.json"))
    assert len(certificates) == len(accepted) >= 8, (accepted, certificates)
