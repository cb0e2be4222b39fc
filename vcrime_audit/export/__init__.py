"""Exports of a store to other tools' formats (optional extras)."""
