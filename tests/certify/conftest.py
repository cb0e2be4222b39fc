from __future__ import annotations

import pytest

from vcrime_audit.certify.graph import QueryGraph

from .hand_graph import hand_graph


@pytest.fixture
def graph() -> QueryGraph:
    return hand_graph()
