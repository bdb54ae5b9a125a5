"""pass^k and pass@k against values computed by hand."""

from __future__ import annotations

import pytest

from judge import pass_at_k, pass_hat_k, repeat_stats


@pytest.mark.parametrize(
    ("n", "c", "k", "hat", "at"),
    [
        (4, 4, 2, 1.0, 1.0),
        (4, 0, 1, 0.0, 0.0),
        (4, 2, 1, 0.5, 0.5),
        (4, 2, 2, 1 / 6, 5 / 6),  # C(2,2)/C(4,2); 1 - C(2,2)/C(4,2)
        (4, 3, 2, 3 / 6, 1.0),  # C(3,2)/C(4,2); any 2 of 4 include a pass
        (5, 3, 3, 1 / 10, 1.0),  # C(3,3)/C(5,3)
        (5, 1, 3, 0.0, 6 / 10),  # 1 - C(4,3)/C(5,3)
    ],
)
def test_estimators(n: int, c: int, k: int, hat: float, at: float) -> None:
    assert pass_hat_k(n, c, k) == pytest.approx(hat)
    assert pass_at_k(n, c, k) == pytest.approx(at)


def test_bad_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="between 1 and the runs"):
        pass_hat_k(3, 1, 4)
    with pytest.raises(ValueError, match="passes"):
        pass_at_k(3, 4, 1)


def test_per_case_and_overall() -> None:
    stats = repeat_stats(
        {
            "always": [True, True, True, True],
            "half": [True, False, True, False],
            "never": [False, False, False, False],
            "short": [True, None],  # one gradable run: only k=1 applies
        }
    )
    by_id = {c.case_id: c for c in stats.cases}
    assert by_id["half"].pass_hat == pytest.approx({1: 0.5, 2: 1 / 6, 3: 0.0, 4: 0.0})
    assert by_id["short"].runs == 1 and set(by_id["short"].pass_hat) == {1}
    # k=1: the mean of (1, .5, 0, 1); k=2: the mean over the three cases with 4 runs.
    assert stats.pass_hat[1] == pytest.approx(2.5 / 4)
    assert stats.pass_hat[2] == pytest.approx((1 + 1 / 6 + 0) / 3)
    assert stats.pass_at[2] == pytest.approx((1 + 5 / 6 + 0) / 3)
    assert stats.varying == ["half"]
    assert stats.to_dict()["pass_hat_k"]["4"] == pytest.approx(1 / 3)
    # each k says how many cases its mean is over: "short" drops out from k=2
    assert stats.covered == {1: 4, 2: 3, 3: 3, 4: 3}
    assert stats.to_dict()["pass_k_cases"] == {"1": 4, "2": 3, "3": 3, "4": 3}


def test_chosen_ks() -> None:
    stats = repeat_stats({"a": [True, False, True]}, ks=[1, 3, 5])
    assert set(stats.pass_hat) == {1, 3}
    assert stats.pass_hat[3] == 0.0 and stats.pass_at[3] == 1.0
