"""Paired overhead ratios with a bootstrap interval: the one statistic every overhead benchmark reports.

An overhead run measures an untraced baseline and one or more traced settings, each in a fresh
process, settings taking turns round by round so that slow drift of the machine (clocks, other
tenants, thermal state) falls on all of them alike. Within a round the baseline and a setting ran
minutes apart at most, so their ratio is the paired estimate; the median over rounds is robust to
one disturbed round, and resampling the rounds (bootstrap) gives its 95 % interval.

Pure functions over lists of floats; no I/O. Thread-safety: none needed (no shared state).
"""

import random
import statistics


def paired_ratios(base, values, higher_is_better):
    """Per-round cost ratios of a setting against the baseline of the same round.

    base, values: one measurement per round (same length). higher_is_better: True for a
    throughput (tokens/s: ratio = base / value), False for a duration (s: value / base).
    A ratio of 1.05 means the setting costs 5 %. Rounds where either value is missing (None)
    or not positive are left out.
    """
    out = []
    for b, v in zip(base, values):
        if b is None or v is None or b <= 0 or v <= 0:
            continue
        out.append(b / v if higher_is_better else v / b)
    return out


def bootstrap_median_ci(ratios, resamples=2000, level=0.95, seed=1):
    """(median, low, high) of the ratios; the interval from resampling the rounds.

    Returns (None, None, None) for no ratios; with one ratio the interval is that ratio.
    Seeded, so a report regenerated from the same figures gives the same interval.
    """
    if not ratios:
        return None, None, None
    med = statistics.median(ratios)
    if len(ratios) == 1:
        return med, med, med
    rng = random.Random(seed)
    n = len(ratios)
    meds = sorted(statistics.median(rng.choice(ratios) for _ in range(n)) for _ in range(resamples))
    tail = (1.0 - level) / 2.0
    low = meds[int(tail * (resamples - 1))]
    high = meds[int((1.0 - tail) * (resamples - 1))]
    return med, low, high


def summarise(base, values, higher_is_better):
    """Dict with rounds, median paired ratio and its interval (rounded), for a JSON report."""
    ratios = paired_ratios(base, values, higher_is_better)
    med, low, high = bootstrap_median_ci(ratios)
    rnd = (lambda x: None if x is None else round(x, 4))
    return {"rounds": len(ratios), "ratio": rnd(med), "ci95": [rnd(low), rnd(high)],
            "ratios": [round(r, 4) for r in ratios]}


def describe(summary):
    """'1.034x [1.012, 1.051], 10 rounds' (or 'no rounds')."""
    if not summary["rounds"]:
        return "no rounds"
    return "%.3fx [%.3f, %.3f], %d rounds" % (summary["ratio"], summary["ci95"][0],
                                              summary["ci95"][1], summary["rounds"])
