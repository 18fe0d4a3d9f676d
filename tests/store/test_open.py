"""Opening a store: where it lives, migrations, and one-line errors for unusable URLs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from hypothesis import given
from hypothesis import strategies as st

from donegate.codec import message_from_json, message_to_json, turn_from_json, turn_to_json
from donegate.errors import UserError
from donegate.messages import (
    Ending,
    ErrorInfo,
    MediaPart,
    Message,
    RefusalPart,
    ServerToolPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)
from donegate.store._db import MIGRATIONS, Database, default_url, resolve_url
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
        assert context.get_current_revision() == "0012_event_checks"
        assert compare_metadata(context, metadata) == []
    store.close()


def test_a_store_at_the_first_migration_moves_forward_keeping_its_rows(store_url: str) -> None:
    database = Database(store_url)
    config = Config()
    config.set_main_option("script_location", MIGRATIONS)
    with database.write() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0001_initial")
        conn.execute(
            sa.text(
                "insert into tasks (id, status, spec, created_at, updated_at) "
                'values (\'old\', \'pending\', \'{"id": "old", "prompt": "p"}\', 1, 1)'
            )
        )
    database.dispose()
    store = open_store(store_url)  # runs r0002_turns and r0003_review
    lease = store.claim("w", 30)
    assert lease is not None and lease.task_id == "old"
    turn = Turn(
        message=Message(role="assistant", parts=(TextPart(text="hi"),)), ending=Ending.COMPLETE
    )
    store.journal(lease, turn=(1, turn), messages=[(0, Message.user("p"))])
    assert store.turns("old", 0) == [turn]
    assert [r.replayed_calls for r in store.runs("old")] == [0]
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


def _every_field_set() -> Turn:
    call = ToolCall.from_args(id="c1", name="send", arguments={"to": "ann", "n": [1, 2]})
    return Turn(
        message=Message(
            role="assistant",
            parts=(
                ThinkingPart(text="plan", signature="s", redacted=True),
                TextPart(text="x"),
                call,
            ),
        ),
        ending=Ending.TRUNCATED,
        raw_reason="max_tokens",
        detail="cut in a tool call",
        usage=Usage(
            input_tokens=10,
            output_tokens=5,
            cache_read_tokens=3,
            cache_write_tokens=2,
            reasoning_tokens=1,
        ),
        model="claude-x-1",
        response_id="msg_1",
        error=ErrorInfo(status=429, type="rate_limit_error", message="slow down", retry_after=1.5),
        api="anthropic",
    )


def test_a_turn_round_trips_through_json_with_every_field() -> None:
    turn = _every_field_set()
    for f in dataclasses.fields(Turn):  # a field added to Turn must be set here, and kept
        assert getattr(turn, f.name) != f.default, f.name
    assert turn_from_json(json.loads(json.dumps(turn_to_json(turn)))) == turn
    bare = Turn(message=Message(role="assistant", parts=()), ending=Ending.ERROR, error=ErrorInfo())
    data = turn_to_json(bare)  # defaults left out, but an empty error is still an error
    assert data == {"message": {"role": "assistant", "parts": []}, "ending": "error", "error": {}}
    assert turn_from_json(data) == bare


_text = st.text(max_size=12)
_args = st.dictionaries(st.text(max_size=5), st.integers() | _text | st.booleans(), max_size=3)
_parts = st.one_of(
    st.builds(TextPart, text=_text),
    st.builds(ThinkingPart, text=_text, signature=st.none() | _text, progress=st.booleans()),
    st.builds(RefusalPart, text=_text),
    st.builds(lambda i, n, a: ToolCall.from_args(id=i, name=n, arguments=a), _text, _text, _args),
    st.builds(lambda i, raw: ToolCall.from_raw(id=i, name="f", arguments_raw=raw), _text, _text),
)
_turns = st.builds(
    Turn,
    message=st.builds(lambda ps: Message(role="assistant", parts=tuple(ps)), st.lists(_parts)),
    ending=st.sampled_from(Ending),
    raw_reason=st.none() | _text,
    detail=st.none() | _text,
    usage=st.builds(Usage, input_tokens=st.integers(0, 10**6), output_tokens=st.integers(0, 99)),
    model=st.none() | _text,
    error=st.none()
    | st.builds(
        ErrorInfo,
        status=st.none() | st.integers(400, 599),
        message=_text,
        retry_after=st.none() | st.floats(0, 60),
    ),
)


@given(_turns)
def test_any_turn_round_trips_through_json(turn: Turn) -> None:
    assert turn_from_json(json.loads(json.dumps(turn_to_json(turn)))) == turn


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
