"""Re-record ``cassettes/human-demo/``: the scripted person's turn against the embedded model.

    python -m tests.web.record
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from vcrime_audit.web.game import new_game

from .script import RECORDED, TASK, TURNS, play_scripted


def main() -> None:
    if RECORDED.exists():
        shutil.rmtree(RECORDED)
    with tempfile.TemporaryDirectory() as tmp:
        game = new_game(TASK, "human:demo", "smollm2-135m", "smollm2-135m", Path(tmp) / "demo.sqlite",
                        RECORDED, seed=0, max_turns=len(TURNS))
        asyncio.run(play_scripted(game))
    if game.outcome is None:
        raise SystemExit(f"recording failed: {game.error}")
    print(f"{game.outcome.run_id}: {game.outcome.status} after {game.outcome.turns} turn(s); "
          f"{game.outcome.cassette}")


if __name__ == "__main__":
    main()
