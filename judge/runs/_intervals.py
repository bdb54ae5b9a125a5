"""Intervals of a proportion: a value and its 95% bounds."""

from __future__ import annotations

from dataclasses import dataclass
from math import sqrt

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}

    def mirrored(self) -> Interval:
        """The interval of the negated quantity (a difference read the other way round)."""
        return Interval(-self.value, -self.high, -self.low)

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def wilson(rate: float, n: int, z: float = Z95) -> Interval:
    """The Wilson score interval of a proportion `rate` observed over `n` units."""
    if n <= 0:
        raise ValueError("n must be positive")
    denominator = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / denominator
    half = z * sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / denominator
    # The interval always holds the rate; clamping only undoes floating-point rounding.
    return Interval(rate, min(rate, max(0.0, centre - half)), max(rate, min(1.0, centre + half)))
