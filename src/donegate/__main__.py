"""``python -m donegate``."""

from donegate.cli import main

main()
