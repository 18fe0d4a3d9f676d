"""A check's result: the one shape every layer carries (gate rounds, reports, certificates, hooks).

The harness's checks build it; `donegate.records.report.ReportCheck`, the certificate's
`CertificateCheck` and the hooks' `CheckBrief` are its JSON forms, written from it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["CheckResult"]


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckResult:
    """What one check found, as recorded evidence."""

    name: str
    """The check's stable name, e.g. ``run: pytest -q``."""
    kind: str
    """The check kind: ``run``, ``file_exists``, ``sql``..."""
    passed: bool
    detail: str
    """One line: why it failed, or a summary of what passed."""
    command: str | None = None
    """What ran: the argv, the query, the request, the function; None for file checks."""
    exit_code: int | None = None
    """The process exit code of a ``run`` check (None when it never exited on its own)."""
    output: str = ""
    """Captured stdout and stderr (or response body), the last ``CHECK_OUTPUT_CAP`` bytes
    (`donegate.harness.checks`)."""
    output_digest: str = hashlib.sha256(b"").hexdigest()
    """SHA-256 hex of the full output, before capping."""
    duration_s: float = 0.0
