"""The completion gate: task specs, acceptance checks, built-in tools (exports come later)."""

__all__: list[str] = []
