"""What the play page shows of a world: only what the Attacker's observation shows.

The map holds the locations where a crew member stands and the exits from them (the
"exits:" lines of :func:`agents.render.observation`), laid out on a circle for an inline SVG.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..world import WorldState

WIDTH, HEIGHT, RADIUS = 640, 300, 130


@dataclass(frozen=True)
class MapNode:
    id: str
    name: str
    crew: tuple[str, ...]
    x: float
    y: float


@dataclass(frozen=True)
class MapView:
    nodes: tuple[MapNode, ...]
    links: tuple[tuple[str, str], ...]
    width: int = WIDTH
    height: int = HEIGHT

    def node(self, node_id: str) -> MapNode:
        return next(n for n in self.nodes if n.id == node_id)


def visible_map(world: WorldState) -> MapView:
    """Crew locations, their exits and the links between them; nothing the crew cannot see."""
    crew: dict[str, list[str]] = {}
    for member in world.members.values():
        crew.setdefault(member.current_location, []).append(member.id)
    links = sorted({tuple(sorted((here, there))) for here in crew for there in world.neighbours(here)})
    ids = sorted(set(crew) | {i for link in links for i in link},
                 key=lambda i: (i not in crew, i))
    nodes = []
    for k, node_id in enumerate(ids):
        angle = math.pi + 2 * math.pi * k / max(len(ids), 1)
        x = WIDTH / 2 + (0 if len(ids) == 1 else 1.9 * RADIUS * math.cos(angle))
        y = HEIGHT / 2 + (0 if len(ids) == 1 else 0.95 * RADIUS * math.sin(angle))
        nodes.append(MapNode(node_id, world.locations[node_id].name, tuple(sorted(crew.get(node_id, []))),
                             round(x, 1), round(y, 1)))
    return MapView(tuple(nodes), tuple((a, b) for a, b in links))
