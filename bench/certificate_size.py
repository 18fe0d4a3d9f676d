"""Certificate size and write time for a task of 10 turns, each reading a 1 MB file.

One run: ``python bench/certificate_size.py``. A real `run_task` through `ScriptedModel` writes
the certificate (version 3: compact, each output stored once, in the evidence); the baseline,
measured in the same run from the same run's data, is the version 2 form (every output embedded
again in the transcript, ``indent=1``). Target (issue 14): the certificate stays ~1x the outputs
at most, never the ~2x of the version 2 form; printed as a ratio of the outputs' total.
"""

from __future__ import annotations

import json
import os
import random
import string
import tempfile
import time
from pathlib import Path

from donegate.harness.evidence import plain_data, transcript_digest
from donegate.harness.runner import run_task
from donegate.harness.spec import TaskSpec
from donegate.testing.player import ScriptedModel
from donegate.testing.script import parse_script

TURNS = 10
SIZE = 1_000_000


def main() -> None:
    root = Path(tempfile.mkdtemp())
    os.environ.setdefault("DONEGATE_HOME", str(root / "home"))
    rnd = random.Random(1)
    for i in range(TURNS):
        text = "".join(rnd.choice(string.ascii_letters + " \n") for _ in range(SIZE))
        (root / f"f{i}.txt").write_text(text)
    spec = TaskSpec.model_validate(
        {"id": "big", "prompt": "Read them.", "tools": ["read_file"], "max_read_bytes": 2 * SIZE,
         "checks": [{"file_exists": "f0.txt"}]}
    )  # fmt: skip
    turns = [{"tool_call": "read_file", "args": {"path": f"f{i}.txt"}} for i in range(TURNS)]
    script = parse_script({"prompt": "p", "turns": [*turns, {"text": "done"}]}, source="bench")
    result = run_task(spec, model=ScriptedModel(script, name="script:w"), workdir=root,
                      completion_tool=None)  # fmt: skip
    assert result.certificate is not None, result.reason
    cert = json.loads(result.certificate.read_text())
    outputs = TURNS * SIZE
    v3 = result.certificate.stat().st_size
    full = plain_data(list(result.run.transcript))
    old = {**cert, "version": 2}
    old["transcript"] = {"messages": len(full), "digest": transcript_digest(full), "data": full}
    started = time.perf_counter()
    v2_text = json.dumps(old, indent=1, ensure_ascii=False)
    v2_s = time.perf_counter() - started
    started = time.perf_counter()
    json.dumps(cert, ensure_ascii=False, separators=(",", ":"))
    v3_s = time.perf_counter() - started
    v2 = len(v2_text.encode())
    print(f"{TURNS} turns x {SIZE / 1e6:g} MB outputs ({outputs / 1e6:.1f} MB in all)")
    print(f"version 2 form (outputs twice, indent=1): {v2 / 1e6:.2f} MB = {v2 / outputs:.2f}x "
          f"the outputs; json.dumps {v2_s * 1e3:.0f} ms")  # fmt: skip
    print(f"version 3 (compact, each output once):   {v3 / 1e6:.2f} MB = {v3 / outputs:.2f}x "
          f"the outputs; json.dumps {v3_s * 1e3:.0f} ms")  # fmt: skip
    print(f"target: <= 1x the outputs: {'met' if v3 <= outputs else 'NOT met'}")


if __name__ == "__main__":
    main()
