"""Opening a store: where it lives, migrations, and one-line errors for unusable URLs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from donegate.errors import UserError
from donegate.messages import (
    MediaPart,
    Message,
    RefusalPart,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
)
from donegate.store._codec import message_from_json, message_to_json
from donegate.store._db import default_url, resolve_url
from donegate.store._schema import metadata
from donegate.store.sql import open_store


def test_the_default_store_lives_under_donegate_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DONEGATE_HOME", str(tmp_path / "home"))
    assert default_url() == f"sqlite:///{tmp_path / 'home' / 'donegate.db'}"
    store = open_store()
    store.close()
    assert (tmp_path / "home" / "donegate.db").is_file()


def test_db_takes_a_path_or_a_url(tmp_path: Path) -> None:
    assert resolve_url(tmp_path / "x.db") == f"sqlite:///{tmp_path / 'x.db'}"
    assert resolve_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert resolve_url("sqlite:///a.db") == "sqlite:///a.db"


def test_migrations_build_exactly_the_tables_the_code_uses(store_url: str) -> None:
    store = open_store(store_url)
    with store._db.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"version_table": "donegate_alembic_version"}
        )
        assert context.get_current_revision() == "0001_initial"
        assert compare_metadata(context, metadata) == []
    store.close()


@pytest.mark.parametrize(
    ("url", "named"),
    [
        (
            "postgresql+psycopg://ann:secret@127.0.0.1:1/tasks",
            "postgresql+psycopg://ann:***@127.0.0.1:1/tasks",
        ),
        ("mysql://h/db", "mysql://h/db"),
        ("bad url://x", "bad url://x"),
    ],
)
def test_an_unusable_url_is_a_one_line_error_naming_it(url: str, named: str) -> None:
    with pytest.raises(UserError) as info:
        open_store(url)
    message = str(info.value)
    assert named in message and "\n" not in message
    assert "secret" not in message


def test_an_unwritable_sqlite_path_is_a_one_line_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(UserError, match="cannot create the store at sqlite:///") as info:
        open_store(blocker / "sub" / "x.db")
    assert "\n" not in str(info.value)


def test_messages_round_trip_through_json() -> None:
    call = ToolCall.from_raw(
        id="c1", name="send", arguments_raw='{"to": "ann"}', provider_details={"type": "x"}
    )
    bad = ToolCall.from_raw(id="c2", name="send", arguments_raw='{"to":')
    messages = [
        Message.system("s"),
        Message(
            role="assistant",
            parts=(
                ThinkingPart(text="hmm", signature="sig", progress=True),
                TextPart(text="hi", provider_details={"citations": [1, 2]}),
                RefusalPart(text="no"),
                MediaPart(mime_type="image/png", data="AAA="),
                ServerToolPart(name="web_search", id="s1", data={"q": "x"}),
                call,
                bad,
            ),
        ),
        Message.tool_results([ToolResult(call_id="c1", name="send", content="ok", is_error=True)]),
    ]
    for message in messages:
        data = json.loads(json.dumps(message_to_json(message)))
        assert message_from_json(data) == message


def test_nothing_stored_is_lost_when_a_bad_submit_is_refused(store_url: str) -> None:
    store = open_store(store_url)
    store.submit("keep", {"id": "keep", "prompt": "p"}, type=None)
    with pytest.raises(UserError):
        store.submit("", {"id": "", "prompt": "p"}, type=None)
    with pytest.raises(UserError):
        store.submit("keep", {"id": "keep", "prompt": "other"}, type=None)
    assert [t.id for t in store.list_tasks()] == ["keep"]
    with store._db.read() as conn:
        assert conn.execute(sa.text("select count(*) from tasks")).scalar() == 1
    store.close()
