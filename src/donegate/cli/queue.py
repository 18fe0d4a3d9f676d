"""The task-queue commands, one module each: submit and tasks, worker, escalations, stats."""

from __future__ import annotations

from donegate.cli import escalations, stats, tasks, worker

__all__ = ["escalations", "stats", "tasks", "worker"]
