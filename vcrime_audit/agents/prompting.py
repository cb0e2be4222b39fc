"""Prompt templates: one Jinja2 file per agent call, in ``vcrime_audit/prompts/``."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(PROMPTS_DIR), undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False, trim_blocks=True, lstrip_blocks=True, autoescape=False,
        auto_reload=False)  # templates are package data: no stat() of the file on every render


def render(template: str, **context: Any) -> str:
    return environment().get_template(f"{template}.j2").render(**context).strip()


def template_names() -> list[str]:
    return sorted(p.stem for p in PROMPTS_DIR.glob("*.j2"))
