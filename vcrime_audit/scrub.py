"""Remove secrets from anything that is recorded, stored or printed.

Use::

    from vcrime_audit.scrub import scrub_text, scrub_obj

    scrub_text("HTTP 500: Authorization: Bearer sk-12345678")  # 'HTTP 500: Authorization: [scrubbed]'
    record = scrub_obj(record)                             # a scrubbed deep copy (dicts, lists, str)

What is replaced by :data:`PLACEHOLDER`:

1. the values of credential environment variables: those a model entry names
   (``options.api_key_env``, ``options.base_url_env``), the usual ones (OPENAI_API_KEY,
   HF_TOKEN, ...) and every variable whose name ends in API_KEY, APIKEY, TOKEN, SECRET, PASSWORD
   or PASSWD (values of 8+ characters);
2. credentials in URLs (``scheme://user:pass@host`` keeps scheme and host);
3. ``Authorization`` / ``Proxy-Authorization`` / ``api-key`` / ``x-api-key`` header values
   (as ``Name: value``, ``"name": "value"`` or ``'name': 'value'``) when the value looks like a
   credential (8+ token characters, at least one digit), so plain prose such as
   "authorization: granted" in a model's answer is left as it is, and any ``Bearer``/``Basic``
   token of 8+ characters;
4. extra regular expressions a model entry lists in ``scrub_patterns`` (as vcrpy's
   ``filter_headers``), registered with :func:`add_patterns` when the model is loaded for a job.

Environment values are read when :func:`scrub_text` is called, so a key set later is caught too
(they are worked out again whenever the environment changed).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

PLACEHOLDER = "[scrubbed]"
SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD)$", re.IGNORECASE)
MIN_SECRET = 8
CREDENTIAL = r"(?=[A-Za-z0-9._~+/=:-]*[0-9])[A-Za-z0-9._~+/=:-]{8,}"
URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<cred>[^/\s@'\"<>]+)@")
HEADER = re.compile(
    r"(?P<name>(?:proxy-)?authorization|x-api-key|api-key|apikey|x-goog-api-key)"
    r"(?P<sep>['\"]?\s*[:=]\s*(?:b?['\"])?)(?P<value>(?:(?:Bearer|Basic|Token)\s+)?" + CREDENTIAL + ")",
    re.IGNORECASE)
TOKEN = re.compile(r"\b(?P<kind>Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}")


class Scrubber:
    """Replaces secrets in text and in JSON-like objects; see the module docstring."""

    def __init__(self, env_names: Iterable[str] = (), patterns: Iterable[str] = ()) -> None:
        self.env_names: set[str] = set(env_names)
        self.patterns: list[re.Pattern[str]] = []
        self.add_patterns(patterns)
        self._secrets: tuple[object, list[str]] | None = None

    def add_env(self, names: Iterable[str]) -> None:
        self.env_names.update(n for n in names if n)
        self._secrets = None

    def add_patterns(self, patterns: Iterable[str]) -> None:
        known = {p.pattern for p in self.patterns}
        self.patterns.extend(re.compile(p) for p in patterns if p not in known)

    def secrets(self) -> list[str]:
        """Current values of the credential variables, longest first; worked out again only when
        the environment changed since the last call (:func:`_environment`)."""
        state = _environment()
        if self._secrets is None or self._secrets[0] != state:
            values: set[str] = set()
            for name, value in os.environ.items():
                if name in self.env_names or SECRET_NAME.search(name):
                    values.update(_secret_parts(value))
            self._secrets = (state, sorted(values, key=len, reverse=True))
        return self._secrets[1]

    def scrub_text(self, text: str) -> str:
        if not text:
            return text
        for value in self.secrets():
            text = text.replace(value, PLACEHOLDER)
        text = URL_CREDENTIALS.sub(lambda m: m["scheme"] + PLACEHOLDER + "@", text)
        text = HEADER.sub(lambda m: m["name"] + m["sep"] + PLACEHOLDER, text)
        text = TOKEN.sub(lambda m: m["kind"] + " " + PLACEHOLDER, text)
        for pattern in self.patterns:
            text = pattern.sub(PLACEHOLDER, text)
        return text

    def scrub_obj(self, obj: Any) -> Any:
        """A deep copy of ``obj`` with every string (keys included) scrubbed."""
        if isinstance(obj, str):
            return self.scrub_text(obj)
        if isinstance(obj, dict):
            return {self.scrub_obj(k): self.scrub_obj(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(self.scrub_obj(v) for v in obj)
        return obj


def _environment() -> object:
    """The environment as it is now, cheap to get and compare: ``os.environ``'s undecoded mapping
    (CPython keeps one on every platform), copied; decoding every variable's name and value on
    each call cost ~0.1 ms per scrubbed string in a study."""
    raw = getattr(os.environ, "_data", None)
    return tuple(raw.items()) if isinstance(raw, dict) else tuple(os.environ.items())


def _secret_parts(value: str) -> set[str]:
    """The value itself; for a URL only its user:password part (the host stays readable)."""
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", value):
        match = URL_CREDENTIALS.match(value)
        if not match:
            return set()
        cred = match["cred"]
        return {p for p in (cred, *cred.split(":", 1)) if len(p) >= MIN_SECRET}
    return {value} if len(value) >= MIN_SECRET else set()


SCRUBBER = Scrubber(env_names=("OPENAI_API_KEY", "VCRIME_OPENAI_BASE_URL", "HF_TOKEN",
                               "HUGGING_FACE_HUB_TOKEN"))


def scrub_text(text: str) -> str:
    """``text`` with every secret replaced by :data:`PLACEHOLDER`."""
    return SCRUBBER.scrub_text(text)


def scrub_obj(obj: Any) -> Any:
    """A scrubbed deep copy of a JSON-like object (dict, list, tuple, str, numbers)."""
    return SCRUBBER.scrub_obj(obj)


def add_patterns(patterns: Iterable[str]) -> None:
    """Register a model entry's ``scrub_patterns`` for everything scrubbed from now on."""
    SCRUBBER.add_patterns(patterns)


def add_env(names: Iterable[str]) -> None:
    """Register the names of credential variables a model entry reads."""
    SCRUBBER.add_env(names)


def register_entry(entry: Any) -> None:
    """Register what a model entry says is secret: its credential variables and patterns."""
    options = getattr(entry, "options", {}) or {}
    add_env(str(options[k]) for k in ("api_key_env", "base_url_env") if options.get(k))
    add_patterns(getattr(entry, "scrub_patterns", []) or [])
