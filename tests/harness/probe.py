"""What an agent's program tries against the gate from inside its world (stdlib only).

``python3 probe.py TARGETS_JSON`` (or ``$PROBE_TARGETS``) tries each attack and prints one line,
``PROBE-RESULT {json}``: a list of ``{"what", "ok", "detail"}``, where ``ok`` means the attack
got something (a file's bytes, a folder's entries, a signal delivered, a file written).

TARGETS: ``{"read": [PATH...], "write": [PATH...], "gate": PID}``; with a gate pid it reads
``/proc/PID/environ``, sends it signal 0 and ``SIGSTOP`` (a ``SIGCONT`` follows at once), and
tries ``ptrace`` attach through ``/proc/PID/mem``.
"""

import json
import os
import signal
import sys


def attempt(what, action):
    try:
        got = action()
    except OSError as exc:
        return {"what": what, "ok": False, "detail": f"{type(exc).__name__}: {exc.strerror}"}
    return {"what": what, "ok": bool(got), "detail": repr(got)[:200]}


def read(path):
    if os.path.isdir(path):
        return os.listdir(path)  # an empty folder (a mask) reveals nothing
    with open(path, "rb") as handle:
        return handle.read(4096)  # /dev/null (a mask) reveals nothing


def write(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write("import os  # planted by the agent\n")
    return True


def kill(pid, sig):
    os.kill(pid, sig)
    if sig == signal.SIGSTOP:
        os.kill(pid, signal.SIGCONT)
    return True


def main():
    raw = sys.argv[1] if len(sys.argv) > 1 else os.environ["PROBE_TARGETS"]
    targets = json.loads(raw)
    results = []
    for path in targets.get("read", []):
        results.append(attempt(f"read {path}", lambda p=path: read(p)))
    for path in targets.get("write", []):
        results.append(attempt(f"write {path}", lambda p=path: write(p)))
    gate = targets.get("gate")
    if gate:
        results.append(attempt(f"read /proc/{gate}/environ", lambda: read(f"/proc/{gate}/environ")))
        results.append(attempt(f"open /proc/{gate}/mem", lambda: read(f"/proc/{gate}/mem")))
        results.append(attempt(f"kill -0 {gate}", lambda: kill(gate, 0)))
        results.append(attempt(f"kill -STOP {gate}", lambda: kill(gate, signal.SIGSTOP)))
    print("PROBE-RESULT " + json.dumps(results), flush=True)


main()
