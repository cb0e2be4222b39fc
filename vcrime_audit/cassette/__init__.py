"""Record and replay of every model call (vcrpy-style record modes)."""

from .cassette import Cassette, CassetteError, CassetteMiss, Pending, RecordMode
from .recording import RecordingBackend

__all__ = ["Cassette", "CassetteError", "CassetteMiss", "Pending", "RecordMode", "RecordingBackend"]
