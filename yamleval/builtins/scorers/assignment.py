"""Maximum-weight one-to-one matching between the rows and columns of a score matrix."""
from __future__ import annotations

import math


def max_weight_assignment(matrix: list[list[float]]) -> list[tuple[int, int]]:
    """Pair rows with columns so that the sum of the paired weights is as large as possible.

    ``matrix[i][j]`` is the weight of pairing row ``i`` with column ``j``. The matrix may
    be rectangular: ``min(rows, columns)`` pairs are returned, each row and each column
    used at most once, as ``(row, column)`` tuples sorted by row. This is the Hungarian
    (Kuhn-Munkres) method with potentials, O(n²·m) for n ≤ m, in pure Python. An empty
    matrix (no rows, or rows without columns) gives ``[]``. Among several optimal
    matchings, any one may be returned. Raises ``ValueError`` for ragged rows or a
    weight that is not a finite number.
    """
    rows = len(matrix)
    cols = len(matrix[0]) if rows else 0
    for row in matrix:
        if len(row) != cols:
            raise ValueError(
                f"max_weight_assignment: every row must have {cols} columns, got a row of {len(row)}"
            )
        for weight in row:
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
                raise ValueError(f"max_weight_assignment: weights must be finite numbers, got {weight!r}")
    if rows == 0 or cols == 0:
        return []
    if rows <= cols:
        # Maximizing weight is minimizing its negation.
        cost = [[-float(w) for w in row] for row in matrix]
        return _min_cost_assignment(cost)
    cost = [[-float(matrix[i][j]) for i in range(rows)] for j in range(cols)]
    return sorted((i, j) for j, i in _min_cost_assignment(cost))


def _min_cost_assignment(cost: list[list[float]]) -> list[tuple[int, int]]:
    """Minimum-cost assignment of every row for an n × m cost matrix with n ≤ m."""
    n, m = len(cost), len(cost[0])
    inf = math.inf
    # 1-based potentials; column 0 is a sentinel holding the row being inserted.
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    owner = [0] * (m + 1)  # owner[j]: row (1-based) assigned to column j, 0 if free
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        owner[0] = i
        j0 = 0
        min_slack = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = owner[j0]
            row = cost[i0 - 1]
            u_i0 = u[i0]
            delta = inf
            j1 = 0
            for j in range(1, m + 1):
                if not used[j]:
                    slack = row[j - 1] - u_i0 - v[j]
                    if slack < min_slack[j]:
                        min_slack[j] = slack
                        way[j] = j0
                    if min_slack[j] < delta:
                        delta = min_slack[j]
                        j1 = j
            for j in range(m + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    min_slack[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        # Flip the augmenting path back to the root.
        while j0:
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    pairs = [(owner[j] - 1, j - 1) for j in range(1, m + 1) if owner[j]]
    pairs.sort()
    return pairs
