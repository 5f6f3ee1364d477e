"""How far a scorer can be trusted: its verdicts against people's on the same items, as the
share that agree and Cohen's kappa (agreement beyond what chance gives) with an interval.

The interval is the normal one around kappa with the large-sample variance of Fleiss, Cohen and
Everitt (1969), as statsmodels' ``cohens_kappa`` computes it, held within [-1, 1]."""
from __future__ import annotations

import math
from statistics import NormalDist

from yamleval.analysis import stats
from yamleval.records.reviews import Agreement

MIN_VERDICTS = 10  # fewer pairs than this say too little for a gate (``judge_agreement``)


def measured(scorer: str, matrix: tuple[tuple[int, int], tuple[int, int]], confidence: float = 0.95) -> Agreement:
    """The agreement of ``matrix`` (rows: the person's pass, fail; columns: the scorer's)."""
    n = sum(map(sum, matrix))
    agreed = matrix[0][0] + matrix[1][1]
    kappa, interval = _kappa(matrix, confidence) if n else (None, None)
    return Agreement(scorer, matrix, agreed / n if n else None, kappa, interval,
                     stats.wilson_interval(agreed, n, confidence) if n else None)


def _kappa(matrix, confidence: float) -> tuple[float | None, tuple[float, float] | None]:
    n = sum(map(sum, matrix))
    p = [[cell / n for cell in row] for row in matrix]
    rows = [sum(row) for row in p]  # the person's shares of pass and fail
    cols = [p[0][j] + p[1][j] for j in range(2)]  # the scorer's
    observed = p[0][0] + p[1][1]
    chance = rows[0] * cols[0] + rows[1] * cols[1]
    if 0.0 in rows:  # people said one verdict only: chance explains whatever the scorer said
        return None, None
    kappa = (observed - chance) / (1.0 - chance)
    if n < 2:
        return kappa, None
    on = sum(p[i][i] * (1.0 - (rows[i] + cols[i]) * (1.0 - kappa)) ** 2 for i in range(2))
    off = (1.0 - kappa) ** 2 * sum(p[i][j] * (cols[i] + rows[j]) ** 2 for i in range(2) for j in range(2) if i != j)
    variance = (on + off - (kappa - chance * (1.0 - kappa)) ** 2) / (1.0 - chance) ** 2 / n
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt(max(variance, 0.0))
    return kappa, (max(-1.0, kappa - half), min(1.0, kappa + half))


class Pairs:
    """The confusion matrices of each scorer against people, counted item by item."""

    def __init__(self):
        self.matrices: dict[str, list[list[int]]] = {}
        self.reviewed = self.overruled = 0

    def add(self, result) -> None:
        human = result.human
        if human is None:
            return
        self.reviewed += 1
        self.overruled += human.overruled
        row = 0 if human.verdict == "passed" else 1
        for sid, score in result.scores.items():
            if score.status == "success" and score.passed is not None:
                self.matrices.setdefault(sid, [[0, 0], [0, 0]])[row][0 if score.passed else 1] += 1

    def agreement(self, confidence: float) -> dict[str, Agreement]:
        return {sid: measured(sid, (tuple(m[0]), tuple(m[1])), confidence) for sid, m in self.matrices.items()}
