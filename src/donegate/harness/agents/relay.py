"""The hook command inside the sandbox: hand the payload to the gate outside, print its answer.

Under ``donegate exec`` with the sandbox, the agent CLI runs its hooks inside the sandbox, where
the task, the hook state, the digests and the key are not. So the hook command there is this
relay: ``python -I -S relay.py SOCKET DECISION``. It sends its stdin (the CLI's payload) over the
Unix socket the gate bound into the sandbox, then writes the gate's answer (one JSON object:
``stdout``, ``stderr``) to its own stdout and stderr. It imports nothing of donegate and only
the standard library (``-S``: not even ``site``), because it runs at every stop.

A relay that cannot reach the gate, or gets no usable answer, blocks: it prints the CLI's
blocking decision (``{"decision": DECISION, "reason": ...}``) naming what went wrong, since a
gate that cannot decide must not let the agent stop (fail closed).
"""

from __future__ import annotations

import json
import socket
import sys

__all__ = ["ANSWER_LIMIT", "PAYLOAD_LIMIT", "main"]

PAYLOAD_LIMIT = 4 * 1024 * 1024 + 1
"""Bytes of stdin sent at most (the gate refuses a payload over 4 MiB and says so)."""
ANSWER_LIMIT = 8 * 1024 * 1024
"""Bytes of the gate's answer read at most."""
_WAIT_S = 3600.0  # the CLI's own hook timeout ends the relay first


def main(argv: list[str]) -> int:
    """Relay one hook call; always exit 0 with a decision (the gate's, or a block)."""
    if len(argv) != 2:
        return _block("block", f"usage: relay.py SOCKET DECISION, got {len(argv)} argument(s)")
    path, decision = argv
    payload = sys.stdin.buffer.read(PAYLOAD_LIMIT)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(_WAIT_S)
            conn.connect(path)
            conn.sendall(payload)
            conn.shutdown(socket.SHUT_WR)
            answer = _read(conn)
    except OSError as exc:
        return _block(decision, f"cannot reach the gate at {path}: {exc.strerror or exc}")
    try:
        data = json.loads(answer)
        out, err = data["stdout"], data["stderr"]
        if not isinstance(out, str) or not isinstance(err, str):
            raise TypeError("stdout and stderr must be text")
    except (ValueError, KeyError, TypeError) as exc:
        return _block(decision, f"the gate's answer is unusable ({type(exc).__name__}: {exc})")
    sys.stderr.write(err)
    sys.stdout.write(out)
    return 0


def _read(conn: socket.socket) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size <= ANSWER_LIMIT:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _block(decision: str, why: str) -> int:
    reason = f"donegate relay: {why}; the stop is blocked until the gate can decide"
    sys.stderr.write(reason + "\n")
    sys.stdout.write(json.dumps({"decision": decision, "reason": reason}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
