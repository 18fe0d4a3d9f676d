"""Live progress of a gated run, printed with rich on stderr (stdout stays for results)."""

from __future__ import annotations

import json

from rich.console import Console
from rich.markup import escape

from donegate.events import Event, ModelCalled, Progress, ToolCalled
from donegate.harness.gate import GateRound

__all__ = ["LiveProgress"]


def _short(text: str, limit: int = 90) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


class LiveProgress:
    """An event sink and a gate-round callback that narrate the run."""

    def __init__(
        self,
        console: Console,
        *,
        max_continuations: int,
        prefix: str = "",
        header: str | None = None,
    ) -> None:
        self.console = console
        self.max_continuations = max_continuations
        self.prefix = prefix
        self.header = header
        """Printed before the first event: a run refused while it is prepared prints one line."""

    def _start(self) -> None:
        if self.header is not None:
            self.console.print(self.header)
            self.header = None

    def event(self, event: Event) -> None:
        """Print model calls, tool calls and progress updates as they happen."""
        self._start()
        p = self.prefix
        if isinstance(event, ModelCalled):
            turn = event.turn
            said = f" {escape(repr(_short(turn.text, 70)))}" if turn.text else ""
            self.console.print(f"{p}[dim]step {event.step}[/] {turn.ending.value}{said}")
        elif isinstance(event, ToolCalled):
            args = event.call.arguments or {}
            shown = _short(json.dumps(dict(args), ensure_ascii=False), 60)
            state = "[red]error[/]" if event.result.is_error else "[green]ok[/]"
            if not event.executed:
                state = "[yellow]not run[/]"
            self.console.print(f"{p}  -> {escape(event.call.name)} {escape(shown)} {state}")
        elif isinstance(event, Progress):
            self.console.print(f"{p}  [italic cyan]progress: {escape(_short(event.text))}[/]")

    def round(self, round_: GateRound) -> None:
        """Print each gate judgement."""
        self._start()
        p = self.prefix
        verdict = round_.verdict
        failed = sum(not c.passed for c in round_.checks)
        checks = f"checks {len(round_.checks) - failed}/{len(round_.checks)} passed"
        if verdict.action == "accept":
            self.console.print(f"{p}[bold green]gate: accepted[/] ({checks})")
        elif verdict.action == "continue":
            self.console.print(
                f"{p}[bold yellow]gate: not done[/] ({checks}); continuation "
                f"{round_.number}/{self.max_continuations}: {escape(_short(verdict.message, 140))}"
            )
        else:
            self.console.print(f"{p}[bold red]gate: stop[/] {escape(_short(verdict.reason, 140))}")
