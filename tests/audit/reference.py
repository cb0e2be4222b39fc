"""Slow reference computations the audit's statistics are checked against."""

import math


def slow_percentile(values, q: float) -> float:
    """Linear interpolation between order statistics (numpy's default quantile rule), NaN left
    out as the bootstrap leaves out undefined resamples."""
    ordered = sorted(v for v in values if not math.isnan(v))
    h = (len(ordered) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def slow_judgment_sums(runs, judgments, turns=None) -> dict:
    """(judge, run id) -> [non-failure sum, catastrophic sum on risky turns, turns, risky turns]:
    one Python loop over the rows in order, restricted to finished runs and to ``turns``."""
    known = {r.run_id for r in runs}
    sums: dict = {}
    for run_id, turn, judge, risky, non_failure, catastrophic in judgments:
        if run_id not in known or (turns is not None and (run_id, turn) not in turns):
            continue
        s = sums.setdefault((judge, run_id), [0.0, 0.0, [], []])
        s[0] += non_failure
        s[2].append(turn)
        if risky:
            s[1] += catastrophic
            s[3].append(turn)
    return sums


def slow_common_turns(judgments, judges) -> set:
    """(run id, turn) pairs that every judge in ``judges`` scored."""
    seen: dict = {}
    for run_id, turn, judge, *_ in judgments:
        seen.setdefault((run_id, turn), set()).add(judge)
    return {key for key, who in seen.items() if set(judges) <= who}
