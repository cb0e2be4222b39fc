"""vcrime-audit: sandbox evaluation, audits and certification of open-weight LLMs."""

from . import native as _native

__version__ = "0.1.0"

_native.install()  # compiled copies of the hot modules, where built from their current source
