import itertools
import math
import random

import pytest

from yamleval.builtins.scorers.assignment import max_weight_assignment


def brute_force_best(matrix):
    rows, cols = len(matrix), len(matrix[0])
    if rows <= cols:
        return max(sum(matrix[i][j] for i, j in enumerate(perm)) for perm in itertools.permutations(range(cols), rows))
    return max(sum(matrix[i][j] for j, i in enumerate(perm)) for perm in itertools.permutations(range(rows), cols))


def assert_valid(matrix, pairs):
    rows, cols = len(matrix), len(matrix[0])
    assert len(pairs) == min(rows, cols)
    assert len({i for i, _ in pairs}) == len(pairs)
    assert len({j for _, j in pairs}) == len(pairs)
    assert all(0 <= i < rows and 0 <= j < cols for i, j in pairs)
    assert pairs == sorted(pairs)


@pytest.mark.parametrize("square", [True, False])
def test_matches_brute_force_on_random_matrices(square):
    rng = random.Random(0)
    for _ in range(300):
        rows = rng.randint(1, 6)
        cols = rows if square else rng.choice([c for c in range(1, 7) if c != rows])
        integral = rng.random() < 0.5
        matrix = [
            [float(rng.randint(-5, 9)) if integral else rng.uniform(-1.0, 1.0) for _ in range(cols)]
            for _ in range(rows)
        ]
        pairs = max_weight_assignment(matrix)
        assert_valid(matrix, pairs)
        assert sum(matrix[i][j] for i, j in pairs) == pytest.approx(brute_force_best(matrix), abs=1e-9)


def test_optimal_where_greedy_fails():
    # Greedy takes the 10 first and is left with 0 (total 10); the optimum is 9 + 9.
    matrix = [[10, 9], [9, 0]]
    assert max_weight_assignment(matrix) == [(0, 1), (1, 0)]


def test_wide_and_tall_matrices():
    assert max_weight_assignment([[1, 5, 3]]) == [(0, 1)]
    assert max_weight_assignment([[1], [5], [3]]) == [(1, 0)]
    assert max_weight_assignment([[0.1, 0.9, 0.2], [0.8, 0.85, 0.0]]) == [(0, 1), (1, 0)]


def test_ties_still_give_a_full_matching():
    pairs = max_weight_assignment([[1, 1], [1, 1]])
    assert sorted(j for _, j in pairs) == [0, 1]


def test_empty_matrix():
    assert max_weight_assignment([]) == []
    assert max_weight_assignment([[], []]) == []


def test_ragged_matrix_is_refused():
    with pytest.raises(ValueError, match="columns"):
        max_weight_assignment([[1, 2], [3]])


@pytest.mark.parametrize("bad", [math.nan, math.inf, "1", None, True])
def test_non_numeric_weight_is_refused(bad):
    with pytest.raises(ValueError, match="finite numbers"):
        max_weight_assignment([[1.0, bad]])
