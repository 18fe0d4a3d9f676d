"""Every ``ending`` a page of docs/ offers is one the script loader takes."""

from __future__ import annotations

import re
from pathlib import Path

from donegate.messages import Ending

DOCS = Path(__file__).resolve().parents[2] / "docs"
OFFERED = re.compile(r"ending:\s*`?([a-z_]+)|`ending` such as `([a-z_]+)`")


def test_every_ending_the_docs_offer_is_one_the_loader_takes() -> None:
    offered = {
        (page.name, a or b)
        for page in sorted(DOCS.glob("*.md"))
        for a, b in OFFERED.findall(page.read_text(encoding="utf-8"))
    }
    assert offered, "the pattern finds the endings the docs offer"
    known = {e.value for e in Ending}
    unknown = sorted(f"{page}: {name}" for page, name in offered if name not in known)
    assert not unknown, f"endings the loader rejects: {unknown}"
