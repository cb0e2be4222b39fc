"""vcrime-audit: sandbox evaluation, audits and certification of open-weight LLMs."""

__version__ = "0.1.0"
