"""collector_paused: the cycle collector off inside, as it was after (an error included), and a
cycle made inside collected once the collector runs again."""

import gc
import weakref

import pytest

from vcrime_audit.audit.collector import collector_paused


class Node:
    pass


def test_paused_inside_and_restored_after_an_error():
    assert gc.isenabled()
    with pytest.raises(KeyError), collector_paused():
        assert not gc.isenabled()
        raise KeyError("fails inside")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled(), "left off when it was off"
    finally:
        gc.enable()


def test_a_cycle_made_while_paused_is_collected_after():
    with collector_paused():
        a, b = Node(), Node()
        a.other, b.other = b, a
        alive = weakref.ref(a)
        del a, b
        assert alive() is not None, "a cycle outlives its names while paused"
    gc.collect()
    assert alive() is None
