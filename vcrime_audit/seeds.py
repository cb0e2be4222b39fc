"""The two seed-derivation schemes. They differ on purpose and give different values; recorded
cassettes hold the seeds each one derived, so neither may change.

- :func:`blake2b_seed` keys a *named* stream of one turn of a task (episodes, the follow-ups that
  re-ask an episode's turns, the harm check): the key is text, hashed as canonical JSON.
- :func:`seedsequence_seed` extends the certification's numpy ``SeedSequence`` tree, where the walk
  and the jailbreak draws are generator streams 0 and 1 of (run seed, conversation index)
  (:func:`vcrime_audit.certify.distributions.conversation_rng`); the model calls' sampling seeds
  are further integer streams of the same tree.
"""

from __future__ import annotations

import hashlib

import orjson

from .canonical import blake2b_hex, canonical_json

SEED_MODULUS = 2**31 - 1


def blake2b_seed(run_seed: int, task_id: str, turn: int, stream: str) -> int:
    """A 31-bit seed for one named random stream of one turn: blake2b (8 bytes) of the canonical
    JSON of ``[run_seed, task_id, turn, stream]``, modulo 2^31 - 1. Same inputs, same seed.

    Two integers and two texts, the key of every call, are written by orjson as the definition
    writes them (it refuses integers beyond 64 bits and lone surrogates, which take the
    definition's path): 0.7 us, where the general path takes 1.9 us (a replay derives
    ~8 seeds a turn)."""
    if type(run_seed) is int and type(turn) is int and type(task_id) is str and type(stream) is str:
        try:
            key = orjson.dumps([run_seed, task_id, turn, stream])
        except TypeError:  # orjson.JSONEncodeError
            pass
        else:
            digest = hashlib.blake2b(key, digest_size=8).digest()
            return int.from_bytes(digest, "big") % SEED_MODULUS
    return int(blake2b_hex(canonical_json([run_seed, task_id, turn, stream]), 8), 16) % SEED_MODULUS


def seedsequence_seed(seed: int, index: int, stream: int, turn: int) -> int:
    """A 31-bit sampling seed for one certification call: the first 32-bit word of numpy's
    ``SeedSequence([seed, index, stream, turn])``, its top bit cleared."""
    import numpy as np

    state = np.random.SeedSequence([seed, index, stream, turn]).generate_state(1, np.uint32)[0]
    return int(state) & 0x7FFFFFFF
