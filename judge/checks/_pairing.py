"""The pairing of calls with reference calls by least total cost, and which calls of a
pairing break the reference's order."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from functools import cache
from itertools import permutations
from math import perm

_EXHAUSTIVE = 720  # pairings of same-name calls: up to this many, try them all


def rounded(x: float) -> int:
    """`round(x)` (half to even) of a number from 0 to 2**52, without the builtin's call."""
    whole = int(x)
    rest = x - whole  # (exact)
    return whole + 1 if rest > 0.5 or (rest == 0.5 and whole % 2 == 1) else whole


def least_cost_pairs(cost: list[list[int]]) -> list[tuple[int, int]]:
    """Row-column pairs of least total cost (as many pairs as the smaller side)."""
    rows, cols = len(cost), len(cost[0])
    if perm(max(rows, cols), min(rows, cols)) <= _EXHAUSTIVE:
        # Trying every pairing of a few calls is exact and spares scipy's start-up (~0.3 s).
        # The first least-cost pairing in the order of `permutations` wins a tie.
        if rows <= cols:
            return list(enumerate(_cheapest(cost, _orders(cols, rows))))
        by_col = [list(col) for col in zip(*cost, strict=True)]
        return [(row, col) for col, row in enumerate(_cheapest(by_col, _orders(rows, cols)))]
    from scipy.optimize import linear_sum_assignment

    picked_rows, picked_cols = linear_sum_assignment(cost)
    return [(int(r), int(c)) for r, c in zip(picked_rows, picked_cols, strict=True)]


def _cheapest(cost: list[list[int]], options: tuple[tuple[int, ...], ...]) -> tuple[int, ...]:
    """The first of `options` (a column for each row) of least total cost."""
    best, least = options[0], -1
    for option in options:
        total = 0
        for row, col in enumerate(option):
            total += cost[row][col]
        if least < 0 or total < least:
            best, least = option, total
    return best


@cache
def _orders(n: int, k: int) -> tuple[tuple[int, ...], ...]:
    """Every ordered choice of `k` of `range(n)`, in the order of `permutations`."""
    return tuple(permutations(range(n), k))


def out_of_order(pairs: list[tuple[int, int]], groups: Sequence[int] | None = None) -> list[int]:
    """The calls of `(call, expected)` pairs that break the reference order: those outside a
    longest run of pairs whose expected indices increase with the call indices. `groups`
    (by call index: the assistant message of each call) leaves the calls of one message in
    no order among themselves: parallel calls are taken in the reference's order."""
    if groups is None:
        ordered = sorted(pairs)
    else:
        keyed = sorted([(groups[call], expected, call) for call, expected in pairs])
        ordered = [(call, expected) for _, expected, call in keyed]
    tails: list[int] = []  # tails[k]: smallest expected index ending an increasing run of k+1
    tail_at: list[int] = []  # position in `ordered` of that tail
    parent: list[int] = [-1] * len(ordered)
    for position, (_, expected) in enumerate(ordered):
        k = bisect_left(tails, expected)
        if k == len(tails):
            tails.append(expected)
            tail_at.append(position)
        else:
            tails[k] = expected
            tail_at[k] = position
        parent[position] = tail_at[k - 1] if k else -1
    keep: set[int] = set()
    position = tail_at[-1] if tail_at else -1
    while position >= 0:
        keep.add(position)
        position = parent[position]
    late = [ordered[p][0] for p in range(len(ordered)) if p not in keep]
    return late if groups is None else sorted(late)
