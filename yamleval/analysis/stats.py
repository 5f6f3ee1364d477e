"""How sure a pass rate, a mean score or a change between two runs is; standard library only.

- a pass rate: the Wilson score interval;
- a mean: Student's t interval over per-item values (an item's value may be the mean of several
  scores or repeats, so items, not scores, are the observations); the t quantile is computed
  here from the regularized incomplete beta function, at any size (no normal approximation);
- two runs paired by item: the exact (binomial) McNemar test on the items that flipped, and the
  mean difference with a seeded bootstrap interval below ``BOOTSTRAP_BELOW`` pairs, a t interval
  from there on.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

Interval = tuple[float, float]
BOOTSTRAP_BELOW = 1000  # pairs: fewer get a bootstrap interval; more, where the t interval is as good, a t interval
RESAMPLES = 1000
SEED = 0  # the bootstrap's, so that comparing the same two runs gives the same interval each time


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval | None:
    """The Wilson score interval of the rate ``successes / n``; None when ``n`` is 0."""
    if n <= 0:
        return None
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    rate, z2 = successes / n, z * z
    shrink = 1 + z2 / n
    centre = (rate + z2 / (2 * n)) / shrink
    half = z * math.sqrt(rate * (1 - rate) / n + z2 / (4 * n * n)) / shrink
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_interval(item_means: Sequence[float], confidence: float = 0.95) -> Interval | None:
    """Student's t interval for the mean of per-item values; None for fewer than two items."""
    n = len(item_means)
    if n < 2:
        return None
    mean = math.fsum(item_means) / n
    return t_interval(n, mean, math.fsum((v - mean) ** 2 for v in item_means) / (n - 1), confidence)


def t_interval(n: int, mean: float, variance: float, confidence: float = 0.95) -> Interval | None:
    """``mean`` ± t · sqrt(``variance`` / n): the t interval of a mean of ``n`` values whose sample
    variance (n − 1 in the denominator) is ``variance``; None for fewer than two values."""
    if n < 2:
        return None
    half = t_critical(confidence, n - 1) * math.sqrt(max(variance, 0.0) / n)
    return mean - half, mean + half


def t_critical(confidence: float, df: float) -> float:
    """t such that P(|T| <= t) = ``confidence`` for Student's T with ``df`` degrees of freedom.

    Newton's method on the two-sided tail from the normal quantile, which lies below t: the tail
    is convex there, so the steps rise to t and never past it. Near t they shrink quadratically
    until they reach the rounding noise of the tail: a small one that shrinks less than half is noise."""
    alpha = 1 - confidence
    t = NormalDist().inv_cdf(1 - alpha / 2)
    last = math.inf
    for _ in range(200):
        step = (_t_tail(t, df) - alpha) / (2 * _t_density(t, df))
        if abs(step) < 1e-8 * t and abs(step) > last / 2:
            break
        t += step
        if abs(step) <= 1e-15 * t:
            break
        last = abs(step)
    return t


def _t_tail(t: float, df: float) -> float:
    """P(|T| > t): the regularized incomplete beta I_x(df/2, 1/2) at x = df / (df + t²)."""
    return _regularized_beta(df / 2, 0.5, df / (df + t * t), t * t / (df + t * t))


def _t_density(t: float, df: float) -> float:
    return math.exp(-_log_beta(df / 2, 0.5) - 0.5 * math.log(df) - (df + 1) / 2 * math.log1p(t * t / df))


def _log_beta(a: float, b: float) -> float:
    """ln B(a, b). With one argument large, lgamma(a + b) − lgamma(a) would lose digits to the
    size of each: Stirling's series gives their difference directly."""
    a, b = max(a, b), min(a, b)
    if a < 100:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    rise = (a - 0.5) * math.log1p(b / a) + b * math.log(a + b) - b + _stirling(a + b) - _stirling(a)
    return math.lgamma(b) - rise  # rise: ln Γ(a + b) − ln Γ(a)


def _stirling(x: float) -> float:
    """ln Γ(x) − ((x − ½) ln x − x + ½ ln 2π), for x ≥ 100 (the next term is below 1e-17)."""
    square = x * x
    return (1 / 12 - (1 / 360 - 1 / (1260 * square)) / square) / x


def _regularized_beta(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b), given y = 1 − x too, so that neither loses digits to the other."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_x, log_y = (math.log(x), math.log1p(-x)) if x < 0.5 else (math.log1p(-y), math.log(y))
    front = math.exp(a * log_x + b * log_y - _log_beta(a, b))
    if x < (a + 1) / (a + b + 2):  # where the continued fraction converges fast; else by symmetry
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, y) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz's method)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def items_for_power(base_rate: float, candidate_rate: float, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Roughly how many items each run needs for a two-sided test at ``alpha`` to find a
    difference of pass rates this size with probability ``power``: the normal test of two
    proportions on Cohen's effect size h (as statsmodels' ``NormalIndPower`` with
    ``proportion_effectsize``). Pairing the items by id, as ``compare`` does, needs no more.
    None when the rates are equal (no difference to find)."""
    h = abs(2 * math.asin(math.sqrt(candidate_rate)) - 2 * math.asin(math.sqrt(base_rate)))
    if h == 0:
        return None
    normal = NormalDist()
    z = normal.inv_cdf(1 - alpha / 2)

    def reached(n: float) -> float:  # both tails, as statsmodels counts them
        shift = h * math.sqrt(n / 2)
        return normal.cdf(shift - z) + normal.cdf(-shift - z)

    low, high = 1e-9, 2.0
    while reached(high) < power:
        high *= 2
    for _ in range(200):  # bisection: the power grows with n
        middle = (low + high) / 2
        low, high = (middle, high) if reached(middle) < power else (low, middle)
        if high - low < 1e-9 * high:
            break
    return math.ceil(high)


def mcnemar_p_value(worse: int, better: int) -> float:
    """The exact two-sided McNemar p-value of two paired runs from their discordant pairs: items
    that passed and then failed (``worse``) and the other way round (``better``). Twice the
    binomial(n, 1/2) tail at the smaller count, at most 1; 1 without discordant pairs.

    The tail is summed in log space from its largest term down, each term from the one before,
    until what is left (bounded by a geometric series) is below 2⁻⁶⁰ of the sum."""
    n, k = worse + better, min(worse, better)
    if 2 * k >= n:
        return 1.0
    largest = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)
    term = total = 1.0  # in units of the largest term
    for i in range(k, 0, -1):
        term *= i / (n - i + 1)  # C(n, i - 1) / C(n, k)
        total += term
        if term * (i - 1) < total * (n - 2 * i + 3) * 2.0 ** -60:  # the terms below fall by (i - 1) / (n - i + 2)
            break
    return min(1.0, 2.0 * math.exp(largest + math.log(total)))


@dataclass(frozen=True)
class Difference:
    """The mean of paired differences (candidate − base) with its confidence interval."""

    pairs: int
    mean: float | None
    interval: Interval | None
    method: str | None  # "bootstrap" or "t"


def paired_difference(differences: Sequence[float], confidence: float = 0.95, seed: int = SEED) -> Difference:
    """The mean of ``differences`` with a percentile bootstrap interval (``RESAMPLES`` resamples
    of the pairs, seeded) below ``BOOTSTRAP_BELOW`` pairs, a t interval from there on; no
    interval for fewer than two pairs."""
    n = len(differences)
    if not n:
        return Difference(0, None, None, None)
    mean = math.fsum(differences) / n
    if n < 2:
        return Difference(n, mean, None, None)
    if n >= BOOTSTRAP_BELOW:
        return Difference(n, mean, mean_interval(differences, confidence), "t")
    if min(differences) == max(differences):  # every resample is the same (two runs that agree)
        return Difference(n, mean, (mean, mean), "bootstrap")
    draw = random.Random(seed).choices
    means = sorted(math.fsum(draw(differences, k=n)) / n for _ in range(RESAMPLES))
    alpha = 1 - confidence
    return Difference(n, mean, (_percentile(means, alpha / 2), _percentile(means, 1 - alpha / 2)), "bootstrap")


def _percentile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
