"""People's decisions on the human queue: who the reviewers are, and the actions they take.

`donegate.review.reviewers` keeps the reviewers (a secret each, only its hash stored) and proves
an `Actor` from a secret; `donegate.review.actions` is the one place approve, resolve and requeue
happen, called by the CLI and the server alike. It sits beside the worker, above the store and
the harness it joins (STYLE.md's dependency direction).
"""

from __future__ import annotations

from donegate.review.actions import Approved, ReviewStore, approve, approve_file, requeue, resolve
from donegate.review.reviewers import (
    Actor,
    Channel,
    add_reviewer,
    authenticate,
    login_name,
    read_token_file,
)

__all__ = [
    "Actor",
    "Approved",
    "Channel",
    "ReviewStore",
    "add_reviewer",
    "approve",
    "approve_file",
    "authenticate",
    "login_name",
    "read_token_file",
    "requeue",
    "resolve",
]
