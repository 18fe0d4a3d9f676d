"""The ``donegate`` command: the only place that prints or exits.

Exit codes: 0 success, 1 an expectation or invariant failed, 2 bad input or usage, 3 escalated,
4 failed, 130 interrupted (Ctrl-C). Bad input of any kind is one line on stderr naming the file,
field, option or URL, never a traceback.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from donegate.cli._app import app

# Nothing heavy at import: `main` hands a hook call to the resident gate (`donegate.cli._resident`)
# before click, pydantic or the harness are imported, and imports them only when it must.

__all__ = ["EXIT_INTERRUPTED", "EXIT_USAGE", "app", "main"]

EXIT_USAGE = 2
"""Bad input or usage: a bad file, option, id, store or model, a missing key or extra."""
EXIT_INTERRUPTED = 130
"""Ctrl-C, by the shell convention (128 + SIGINT)."""


def __getattr__(name: str) -> Any:
    if name == "app":  # the command group, imported when first asked for (PEP 562)
        from donegate.cli._app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs `app`, turning every kind of bad input into one line and exit 2.

    Every donegate program is a gate process: it first makes itself non-dumpable and takes the
    signing key out of its environment (`donegate.harness.custody.secure_process`). A hook call
    of a ``donegate`` process (`argv` None) is first offered to the resident gate
    (`donegate.cli._resident`); when none answers it runs here and then starts one."""
    if argv is None and sys.argv[1:2] == ["hook"]:
        from donegate.cli import _resident

        args = sys.argv[1:]
        if _resident.wanted(args):
            code = _resident.run_warm(args)
            if code is not None:
                _exit_as(code)
            try:
                _main(None)
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(OSError, ValueError):
                        stream.flush()  # the answer first: the CLI is waiting for it
                _resident.spawn_server(sorted(sys.modules))
            return
    _main(argv)


def _exit_as(code: int) -> NoReturn:
    """Exit as the resident gate's child did: with its code, or by the signal that ended it."""
    if code < 0:
        import os
        import signal

        with contextlib.suppress(OSError, ValueError):  # SIGKILL's cannot be set, nor needs it
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        sys.exit(128 - code)
    sys.exit(code)


def _main(argv: list[str] | None) -> None:
    import click

    from donegate.cli._app import app
    from donegate.errors import DonegateError
    from donegate.harness.custody import secure_process

    secure_process()
    try:
        app.main(args=argv, prog_name="donegate", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.UsageError as exc:  # a bad option value, a missing argument, an unknown command
        where = exc.ctx.command_path if exc.ctx is not None else "donegate"
        _fail(f"{where}: {exc.format_message()} (see --help)")
    except click.ClickException as exc:
        _fail(f"donegate: {exc.format_message()}")
    except click.Abort as exc:  # click's form of Ctrl-C (and of EOF at a prompt)
        if isinstance(exc.__cause__, KeyboardInterrupt):
            _fail("donegate: interrupted", EXIT_INTERRUPTED)
        _fail("donegate: aborted")
    except KeyboardInterrupt:
        _fail("donegate: interrupted", EXIT_INTERRUPTED)
    except DonegateError as exc:
        _fail(f"donegate: {exc}")
    except OSError as exc:
        _fail(f"donegate: {exc.filename or ''}: {exc.strerror or exc}")
    except RecursionError:  # a safety net: loaders cap nesting before this can happen
        _fail("donegate: input nested too deeply")
    except Exception as exc:
        if not _is_store_error(exc):
            raise
        _fail(f"donegate: the store failed: {exc.__class__.__name__}: {_first_line(exc)}")


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """One line on stderr, whatever the message held, then exit."""
    import click

    click.echo(" ".join(message.split()), err=True)
    sys.exit(code)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return text.splitlines()[0][:300] if text else ""


def _is_store_error(exc: Exception) -> bool:
    """A SQLAlchemy error (the store's file or server broke mid-command), without importing it."""
    return type(exc).__module__.partition(".")[0] == "sqlalchemy"
