"""The test kit: script files, the strict script player, and the pytest plugin.

Nothing in the rest of donegate imports this package. Import the modules you need
(`donegate.testing.script`, `donegate.testing.player`); this package imports nothing, so the
pytest plugin stays cheap to load.
"""

__all__: list[str] = []
