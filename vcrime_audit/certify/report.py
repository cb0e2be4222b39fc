"""The audit report's certification section: markdown from ``certifications`` rows, nothing else."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .presets import Definition

HEADING = "## Certification (C3LLM)"
SHORT = {"random_node": "RN", "graph_path": "GP", "adaptive_rejection": "AR"}


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def _jailbreak_p(row: Mapping[str, Any]) -> str:
    params = json.loads(row["jailbreak_params"]) if row.get("jailbreak_params") else {}
    return f"{params['p']:g}" if "p" in params else "n/a"


def _definition(row: Mapping[str, Any]) -> str:
    """The certificate's preset and every rule, or a note for rows stored before m006."""
    if not row.get("definition"):
        return "definition not recorded (certified before presets existed)"
    definition = Definition.model_validate_json(row["definition"])
    dropped = f"; {row['n_dropped']} GP sample(s) dropped" if row.get("n_dropped") else ""
    return definition.describe() + dropped


def _line(row: Mapping[str, Any]) -> list[str]:
    done = row.get("status") == "done"
    n_judged = (row["n"] - row["n_missing"] - (row.get("n_dropped") or 0)) if done else None
    return [
        f"`{row['certification_id']}`",
        row["name"],
        SHORT.get(row["distribution"], row["distribution"]),
        _jailbreak_p(row),
        row["target_model"],
        row["judge"],
        f"{row['k']}/{n_judged}" if done else row.get("status") or "n/a",
        str(row["n_missing"]) if done else "n/a",
        f"{100 * row['confidence']:g}%",
        f"[{_num(row['lower'])}, {_num(row['upper'])}]" if done else "n/a",
        f"[{_num(row['conservative_lower'])}, {_num(row['conservative_upper'])}]" if done else "n/a",
        str(row["seed"]),
    ]


def certification_section(rows: Sequence[Mapping[str, Any]]) -> str:
    """Markdown for the ``certifications`` rows (as stored), in the given order."""
    lines = [HEADING, ""]
    if not rows:
        return "\n".join([*lines, "No certification in this store (`vcrime-audit certify`).", ""])
    lines += [
        "Probability that a conversation drawn from the distribution makes the target model give "
        "a catastrophic answer: k catastrophic of the judged conversations, with an exact "
        "Clopper-Pearson interval. A failed judge call is a missing judgment, never a \"no\"; "
        "the conservative interval counts every missing conversation as safe for its lower "
        "bound and as catastrophic for its upper bound.",
        "",
    ]
    header = ["certification", "query set", "dist.", "jailbreak p", "target", "judge", "k/judged",
              "missing", "conf.", "interval", "conservative", "seed"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(_line(row)) + " |" for row in rows]
    lines += ["", "Definitions (the rules each certificate certifies; `paper` is the C3LLM paper's, "
              "`qrllm` the authors' released code's, see the README):", ""]
    lines += [f"- `{row['certification_id']}`: {_definition(row)}" for row in rows]
    cassettes = sorted({row["cassette"] for row in rows if row.get("cassette")})
    if cassettes:
        lines += ["", "Replay any of them without a model: "
                  + ", ".join(f"`vcrime-audit certify --replay {c}`" for c in cassettes)]
    return "\n".join([*lines, ""])
