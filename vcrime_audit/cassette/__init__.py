"""Record and replay of every model call (vcrpy-style record modes)."""

from .cassette import Cassette, CassetteError, CassetteMiss, Pending, RecordMode
from .errors import NoSuchCassette
from .recording import RecordingBackend

__all__ = ["Cassette", "CassetteError", "CassetteMiss", "NoSuchCassette", "Pending", "RecordMode",
           "RecordingBackend"]
