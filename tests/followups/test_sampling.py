"""Seeded per-attacker turn sampling, checked against a slow reference built on hashlib directly."""

import hashlib
import json

import pytest

from vcrime_audit.followups.sampling import sample_turns

POPULATION = [(f"att{a}", f"run{a}-{r}", t) for a in range(3) for r in range(4) for t in range(1, 6)
              if not (a == 2 and r > 0)]  # att2 has only 5 turns


def reference(population, n, seed):
    chosen = []
    for attacker in sorted({p[0] for p in population}):
        keyed = []
        for a, run_id, turn in population:
            if a == attacker:
                text = json.dumps([seed, a, run_id, turn], separators=(",", ":"))
                keyed.append((hashlib.blake2b(text.encode(), digest_size=16).hexdigest(), run_id, turn))
        chosen += [(run_id, turn) for _, run_id, turn in sorted(keyed)[:n]]
    return sorted(chosen)


@pytest.mark.parametrize("n,seed", [(1, 0), (3, 0), (3, 7), (50, 1)])
def test_sample_matches_the_reference(n, seed):
    assert sample_turns(POPULATION, n, seed) == reference(POPULATION, n, seed)


def test_sizes_per_attacker_and_all_when_fewer():
    chosen = sample_turns(POPULATION, 6, 0)
    by = {a: sum(1 for r, _ in chosen if r.startswith(f"run{a[-1]}-")) for a in ("att0", "att1", "att2")}
    assert by == {"att0": 6, "att1": 6, "att2": 5}
    assert set(chosen) <= {(r, t) for _, r, t in POPULATION}


def test_seed_changes_the_sample_and_order_of_rows_does_not():
    assert sample_turns(POPULATION, 4, 0) != sample_turns(POPULATION, 4, 1)
    assert sample_turns(list(reversed(POPULATION)), 4, 3) == sample_turns(POPULATION, 4, 3)


def test_larger_samples_contain_smaller_ones():
    small, large = set(sample_turns(POPULATION, 3, 5)), set(sample_turns(POPULATION, 8, 5))
    assert small < large


def test_per_attacker_must_be_positive():
    with pytest.raises(ValueError, match="--per-attacker must be at least 1"):
        sample_turns(POPULATION, 0, 0)
