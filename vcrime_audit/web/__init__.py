"""People in the loop: a person plays the Attacker (``play``) or rates key turns (``rate``) in a
browser. Starlette pages on loopback; the person's answers go through the same runner, cassette
and store as a model's."""
