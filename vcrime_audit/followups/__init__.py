"""Follow-up workflows over finished runs: re-judging, behaviour annotation, post-hoc interrogation.

Each makes its model calls through a cassette (``runs/cassettes/<kind>-<id>.jsonl.gz`` by default,
``--cassette-dir`` elsewhere) and writes its results to the store for the audit.
"""
