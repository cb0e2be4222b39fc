import hashlib
import json

import numpy as np

from vcrime_audit.seeds import blake2b_seed, seedsequence_seed


def test_blake2b_seed_is_stable_and_separates_streams():
    assert blake2b_seed(1, "t", 3, "outcome") == blake2b_seed(1, "t", 3, "outcome")
    assert len({blake2b_seed(1, "t", 3, s) for s in ("outcome", "attacker.act", "judge.assess")}) == 3
    assert blake2b_seed(1, "t", 3, "outcome") != blake2b_seed(2, "t", 3, "outcome")


def test_blake2b_seed_is_the_hash_of_the_key_modulo_a_mersenne_prime():
    for key in ([0, "robotics_company__data_theft", 1, "attacker.plan"], [2**40, "x", 0, "wm.direct"]):
        text = json.dumps(key, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        expected = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
        assert blake2b_seed(*key) == expected % (2**31 - 1)


def test_seedsequence_seed_is_the_first_word_of_numpy_seed_sequence_without_its_top_bit():
    for key in ([0, 0, 2, 0], [7, 41, 3, 5]):
        word = int(np.random.SeedSequence(key).generate_state(4, np.uint32)[0])
        assert seedsequence_seed(*key) == word % 2**31
        assert 0 <= seedsequence_seed(*key) < 2**31
