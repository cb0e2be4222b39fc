"""Remove secrets from anything before it is recorded, stored or printed.

``scrub_text`` replaces the values of credential variables the backends read, credentials in
URLs and Authorization / API-key header values; ``scrub_obj`` does the same in every string of a
JSON-like value (a copy).
"""

from __future__ import annotations

import os
import re
from typing import Any

PLACEHOLDER = "[scrubbed]"
CREDENTIAL_VARIABLES = ("OPENAI_API_KEY", "VCRIME_OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s:]+(?::[^/@\s]*)?@")
_HEADER_VALUES = re.compile(
    r"(?i)(?P<name>authorization|x-api-key|api-key|proxy-authorization)(?P<sep>['\"]?\s*[:=]\s*['\"]?)"
    r"(?P<value>(?:bearer\s+|basic\s+)?[^\s'\",}]+)")
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{4,}")


def secret_values() -> list[str]:
    """Values of the credential variables in this environment (long enough to be secrets)."""
    names = set(CREDENTIAL_VARIABLES) | {n for n in os.environ if n.endswith(("_API_KEY", "_TOKEN"))}
    return sorted({v for n in names if len(v := os.environ.get(n, "")) >= 6}, key=len, reverse=True)


def scrub_text(text: str, extra: tuple[str, ...] = ()) -> str:
    for value in (*secret_values(), *extra):
        if value:
            text = text.replace(value, PLACEHOLDER)
    text = _URL_CREDENTIALS.sub(lambda m: m.group("scheme") + PLACEHOLDER + "@", text)
    text = _HEADER_VALUES.sub(lambda m: m.group("name") + m.group("sep") + PLACEHOLDER, text)
    return _BEARER.sub("Bearer " + PLACEHOLDER, text)


def scrub_obj(obj: Any, extra: tuple[str, ...] = ()) -> Any:
    if isinstance(obj, str):
        return scrub_text(obj, extra)
    if isinstance(obj, dict):
        return {k: scrub_obj(v, extra) for k, v in obj.items()}
    if isinstance(obj, list):
        return [scrub_obj(v, extra) for v in obj]
    return obj
