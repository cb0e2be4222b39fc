"""Seeded turn sampling for re-judging: per attacker, the N turns with the smallest seeded hash.

Hash ranks (not a PRNG stream) make the sample independent of Python's random module and of the
order rows come in, and nested: a larger N keeps every turn a smaller N chose.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from ..canonical import blake2b_hex, canonical_json


def rank(seed: int, attacker: str, run_id: str, turn: int) -> str:
    return blake2b_hex(canonical_json([seed, attacker, run_id, turn]))


def sample_turns(population: Iterable[tuple[str, str, int]], per_attacker: int,
                 seed: int) -> list[tuple[str, int]]:
    """(attacker, run id, turn) triples in; the chosen (run id, turn) pairs out, sorted."""
    if per_attacker < 1:
        raise ValueError(f"--per-attacker must be at least 1, got {per_attacker}")
    by_attacker: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    for attacker, run_id, turn in population:
        by_attacker[attacker].append((rank(seed, attacker, run_id, turn), run_id, turn))
    chosen = []
    for keyed in by_attacker.values():
        chosen += [(run_id, turn) for _, run_id, turn in sorted(keyed)[:per_attacker]]
    return sorted(chosen)
