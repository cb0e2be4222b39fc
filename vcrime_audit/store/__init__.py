"""The SQLite store every command reads and writes."""

from .db import Store, turn_rows_hash

__all__ = ["Store", "turn_rows_hash"]
