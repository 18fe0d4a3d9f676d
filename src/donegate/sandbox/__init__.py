"""Where the programs donegate starts may look: the sandbox, one module with two backends.

The checks judge the agent's work, so they must run where the agent has never been, and the
commands the agent runs must not reach what judges it. On Linux the ``sandbox`` backend is
bubblewrap (``bwrap``): a mount namespace that shows the system read-only and only the paths a
`Jail` lists, its own PID namespace, an empty ``/tmp`` and home, no network when asked. The
``process`` backend is plain child processes (what donegate did before), used when bwrap is
missing or the kernel refuses namespaces; certificates record which one ran (`Isolation`).

This package sits below the harness: it imports only `donegate.errors`, `donegate.config`, the
standard library and psutil. Processes are still started by ``donegate.harness._process.run``
(whose timeouts hold); `command` only wraps the argv.
"""

from __future__ import annotations

from donegate.sandbox._bwrap import Jail, command
from donegate.sandbox._freeze import frozen
from donegate.sandbox._own import own, owned, owned_identities
from donegate.sandbox._probe import MODES, Backend, Isolation, resolve

__all__ = [
    "MODES",
    "Backend",
    "Isolation",
    "Jail",
    "command",
    "frozen",
    "own",
    "owned",
    "owned_identities",
    "resolve",
]
