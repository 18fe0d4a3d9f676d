"""The test kit: script files, the strict script player, the emulator, recording, assertions.

Nothing in the rest of donegate imports this package. The names below are imported on first
use (module ``__getattr__``), so importing the package, and with it the pytest plugin, stays
cheap: ``from donegate.testing import ScriptedModel, assert_results_match_calls``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from donegate.testing.assertions import (
        assert_argument_from_result,
        assert_results_match_calls,
        assert_tool_order,
        assert_user_message_once_first,
        transcript_from,
    )
    from donegate.testing.emulator import Emulator
    from donegate.testing.player import ScriptedModel
    from donegate.testing.recorder import Recorder, RecordingTransport
    from donegate.testing.script import Script, load_script

__all__ = [
    "Emulator",
    "Recorder",
    "RecordingTransport",
    "Script",
    "ScriptedModel",
    "assert_argument_from_result",
    "assert_results_match_calls",
    "assert_tool_order",
    "assert_user_message_once_first",
    "load_script",
    "transcript_from",
]

_HOMES = {
    "Emulator": "emulator",
    "Recorder": "recorder",
    "RecordingTransport": "recorder",
    "Script": "script",
    "ScriptedModel": "player",
    "assert_argument_from_result": "assertions",
    "assert_results_match_calls": "assertions",
    "assert_tool_order": "assertions",
    "assert_user_message_once_first": "assertions",
    "load_script": "script",
    "transcript_from": "assertions",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'donegate.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"donegate.testing.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
