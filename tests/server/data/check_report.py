"""A harness check (kept outside the agent's workdir): report.txt must say READY.

On failure it prints what the file says, so the escalation shows the check's real output.
"""

import pathlib
import sys

path = pathlib.Path("report.txt")
text = path.read_text(encoding="utf-8") if path.exists() else "(no report.txt)"
if text.strip() == "READY":
    print("report.txt is READY")
    sys.exit(0)
print(f"report.txt is not ready; it says: {text.strip()}")
sys.exit(1)
