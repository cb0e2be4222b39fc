import hashlib
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@settings(max_examples=1000, deadline=None)
@given(run_seed=st.one_of(st.integers(), st.integers(-2**64 - 2, 2**64 + 2), st.booleans()),
       task_id=st.text(), turn=st.one_of(st.integers(-2**70, 2**70), st.integers(0, 60)),
       stream=st.one_of(st.text(), st.text(alphabet=st.characters(min_codepoint=0xD800,
                                                                   max_codepoint=0xDFFF))))
def test_blake2b_seed_is_its_definition_for_any_integers_and_texts(run_seed, task_id, turn, stream):
    """Integers beyond 64 bits, booleans, control characters, lone surrogates: the fast path
    gives the definition's seed, or leaves the key to it."""
    text = json.dumps([run_seed, task_id, turn, stream], separators=(",", ":"), sort_keys=True,
                      ensure_ascii=False)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the definition cannot hash it, nor may this
        with pytest.raises(UnicodeEncodeError):
            blake2b_seed(run_seed, task_id, turn, stream)
        return
    digest = hashlib.blake2b(data, digest_size=8).digest()
    assert blake2b_seed(run_seed, task_id, turn, stream) == int.from_bytes(digest, "big") % (2**31 - 1)


def test_seedsequence_seed_is_the_first_word_of_numpy_seed_sequence_without_its_top_bit():
    for key in ([0, 0, 2, 0], [7, 41, 3, 5]):
        word = int(np.random.SeedSequence(key).generate_state(4, np.uint32)[0])
        assert seedsequence_seed(*key) == word % 2**31
        assert 0 <= seedsequence_seed(*key) < 2**31
