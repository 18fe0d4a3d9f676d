"""``donegate serve`` names the package that is missing, not always uvicorn."""

from __future__ import annotations

import sys

import pytest

from donegate.cli import main


@pytest.mark.parametrize("missing", ["jinja2", "uvicorn"])
def test_serve_names_the_missing_package(
    missing: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # importing it now raises ImportError
    for name in [m for m in sys.modules if m.startswith("donegate.server.")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--port", "0"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert f"{missing} is not installed" in err and 'pip install "donegate[server]"' in err
