"""A reviewer for tests that approve, resolve or requeue: added to the store, secret on file."""

from __future__ import annotations

from pathlib import Path

from donegate.review import add_reviewer
from donegate.store import Reviewers


def reviewer_file(store: Reviewers, folder: Path, name: str = "ann") -> Path:
    """Add reviewer `name` to `store`; the file holding their secret (``--token-file``)."""
    path = folder / f"{name}.token"
    path.write_text(add_reviewer(store, name) + "\n")
    return path


def reviewer_file_at(db: str, folder: Path, name: str = "ann") -> Path:
    """`reviewer_file` on the store at `db` (a URL or SQLite path), opened and closed here."""
    from donegate.store.sql import open_store

    store = open_store(db)
    try:
        return reviewer_file(store, folder, name)
    finally:
        store.close()
