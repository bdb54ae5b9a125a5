"""Fitting a probe's heads, and what they score on data they were not fitted on.

A head (one dimension and branch) is a logistic regression on the standardised hidden state,
optionally reduced by PCA, together with the verdict's answers (log-odds) and counts. Joint:
scikit-learn's, L2 on every weight, classes balanced. Anchored: the answers and counts' own
regression first (fitted on the same rows), then the hidden state as an L2-penalised
correction to its log-odds (scipy's L-BFGS on the exact gradient, the offset fixed), so that
strong regularisation gives that regression back. For transfer to datasets it never saw, the
directions along which the training sources' mean hidden states differ are projected out, and
each source weighs the same. The regularisation, the PCA and the anchoring are chosen by an
inner cross-validation of the training data: leave one source out where there are several, so
the choice is the one that transfers; stratified folds otherwise."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from judge.calibrate._fit import SEED, kappa
from judge.calibrate._probe_data import Unit
from judge.judging._linear_probe import Array, Head
from judge.judging._scored import feature

C_GRID = (0.001, 0.01, 0.1)
PCA_GRID: tuple[int | None, ...] = (None, 32)
ANCHORED_GRID = (False, True)
MIN_ROWS = 20
"""A head needs this many training rows, with both labels at least 5 times."""
_MIN_CLASS = 5
_KNN = 15


@dataclass(frozen=True)
class Matrix:
    """Training rows of one head: hidden states, extras and labels, with each row's source."""

    hidden: np.ndarray
    extras: np.ndarray
    names: tuple[str, ...]
    labels: np.ndarray
    groups: tuple[str, ...]


def matrix(
    units: Sequence[Unit], names: tuple[str, ...] | None = None, *, scoring: bool = False
) -> Matrix | None:
    """The trainable rows of these units (all of one dimension and branch); with `scoring`,
    every row (which rows train matters to fitting only)."""
    rows = [(u, r) for u in units if u.hidden is not None for r in u.rows if r.trainable or scoring]
    if not rows:
        return None
    if names is None:
        names = tuple(sorted({n for _, r in rows for n in r.features}))
    return Matrix(
        hidden=np.stack([u.hidden for u, _ in rows]).astype(np.float64),  # type: ignore[misc]
        extras=np.array([[feature(r.features, n) for n in names] for _, r in rows]).reshape(
            len(rows), len(names)
        ),
        names=names,
        labels=np.array([r.label for _, r in rows], dtype=bool),
        groups=tuple(u.source for u, _ in rows),
    )


def enough(m: Matrix | None) -> bool:
    if m is None or len(m.labels) < MIN_ROWS:
        return False
    positives = int(m.labels.sum())
    return min(positives, len(m.labels) - positives) >= _MIN_CLASS


def fit_head(
    m: Matrix,
    dimension: str,
    branch: str,
    c: float,
    pca: int | None,
    *,
    hidden: bool = True,
    anchored: bool = False,
) -> Head:
    """One head on these rows (`hidden=False`: the extras alone, for comparison), joint or
    `anchored` (the module's docstring), folded into one linear head.

    For transfer to a dataset it never saw: the directions along which the training sources'
    mean hidden states differ are projected out (what tells one dataset from another is not
    what tells a right verdict from a wrong one), and each source weighs the same."""
    from sklearn.decomposition import PCA

    mean, scale = m.hidden.mean(axis=0), m.hidden.std(axis=0)
    scale = np.where(scale < 1e-6, 1.0, scale)
    z = (m.hidden - mean) / scale
    away = _source_directions(z, m.groups)
    if away is not None:
        z = z - (z @ away.T) @ away
    components = None
    if pca is not None and hidden:
        k = min(pca, len(m.labels) - 1, z.shape[1])
        components = PCA(n_components=k, random_state=SEED).fit(z).components_
        z = z @ components.T
    e_mean, e_scale = m.extras.mean(axis=0), m.extras.std(axis=0)
    e_scale = np.where(e_scale < 1e-6, 1.0, e_scale)
    e = (m.extras - e_mean) / e_scale
    x = np.hstack([z, e]) if hidden else e
    weights = _source_weights(m.groups)
    if anchored:
        offset_coef, offset_bias = _logistic(e, m.labels, 1.0, weights)
        offset = e @ offset_coef + offset_bias
        coef, intercept = _offset_logistic(x, m.labels, c, offset, weights)
        coef[x.shape[1] - len(m.names) :] += offset_coef  # the offset folded in
        intercept += offset_bias
    else:
        coef, intercept = _logistic(x, m.labels, c, weights)
    if not hidden:  # the hidden state weighs nothing
        coef = np.concatenate([np.zeros(z.shape[1]), coef])
    elif away is not None and components is None:  # w . (P z) = (P w) . z
        w = coef[: z.shape[1]]
        coef[: z.shape[1]] = w - (w @ away.T) @ away
    return Head(
        dimension=dimension,  # type: ignore[arg-type]
        branch=branch,  # type: ignore[arg-type]
        mean=Array.of(mean),
        scale=Array.of(scale),
        components=None if components is None else Array.of(components),
        extras=m.names,
        extras_mean=Array.of(e_mean),
        extras_scale=Array.of(e_scale),
        coef=Array.of(coef),
        intercept=intercept,
        C=c,
        method="anchored" if anchored else "joint",
        cases=len(m.labels),
    )


def _source_directions(z: np.ndarray, groups: tuple[str, ...]) -> np.ndarray | None:
    """An orthonormal basis of the directions the sources' mean hidden states span (None
    with one source)."""
    names = sorted(set(groups))
    if len(names) < 2:
        return None
    where = np.array(groups)
    means = np.array([z[where == name].mean(axis=0) for name in names])
    _, values, rows = np.linalg.svd(means, full_matrices=False)
    found: np.ndarray = rows[values > 1e-6 * values.max()]
    return found


def _source_weights(groups: tuple[str, ...]) -> np.ndarray:
    """Each row's weight so that every source weighs the same in the fit (mean 1)."""
    where = np.array(groups)
    names = sorted(set(groups))
    counts = {name: int((where == name).sum()) for name in names}
    return np.array([len(groups) / (len(names) * counts[g]) for g in groups])


def _logistic(
    x: np.ndarray, y: np.ndarray, c: float, weights: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c, class_weight="balanced", max_iter=3000)
    model.fit(x, y, sample_weight=weights)
    return model.coef_[0], float(model.intercept_[0])


def _offset_logistic(
    x: np.ndarray, y: np.ndarray, c: float, offset: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, float]:
    """L2 logistic regression with a fixed offset: minimise the log loss of
    sigmoid(offset + x . w + b) plus |w|^2 / 2C (the intercept free). scikit-learn takes no
    offset; L-BFGS on the exact gradient does."""
    from scipy.optimize import minimize

    sign = np.where(y, 1.0, -1.0)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        margin = sign * (offset + x @ w + b)
        value = float(weights @ np.logaddexp(0.0, -margin) + w @ w / (2 * c))
        g = -weights * sign / (1.0 + np.exp(np.clip(margin, -50, 50)))
        return value, np.concatenate([x.T @ g + w / c, [g.sum()]])

    found = minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B")
    return found.x[:-1].copy(), float(found.x[-1])


def _splits(m: Matrix) -> list[tuple[np.ndarray, np.ndarray]]:
    """Leave one source out where there are two or more with both labels; else 3 folds."""
    index = np.arange(len(m.labels))
    sources = sorted(set(m.groups))
    groups = np.array(m.groups)
    usable = [s for s in sources if len(set(m.labels[groups == s])) == 2]
    if len(sources) >= 2 and usable:
        return [(index[groups != s], index[groups == s]) for s in usable]
    from sklearn.model_selection import StratifiedKFold

    k = max(2, min(3, int(min(m.labels.sum(), (~m.labels).sum()))))
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=SEED)
    return list(splitter.split(m.hidden, m.labels))


def _subset(m: Matrix, rows: np.ndarray) -> Matrix:
    return Matrix(
        m.hidden[rows], m.extras[rows], m.names, m.labels[rows], tuple(m.groups[i] for i in rows)
    )


def _scores(head: Head, m: Matrix) -> np.ndarray:
    return head.scores(m.hidden, m.extras)


def choose(m: Matrix, dimension: str, branch: str, *, hidden: bool = True) -> Head:
    """The head whose regularisation, PCA and anchoring scored the best kappa in the inner
    cross-validation (ties: joint, no PCA, stronger regularisation), fitted on all of `m`."""
    chosen: tuple[float, int | None, bool] = (C_GRID[0], None, False)
    best = -2.0
    grid = [
        (c, p, anchored)
        for anchored in ANCHORED_GRID
        for p in (PCA_GRID if hidden else (None,))
        for c in C_GRID
    ]
    splits = _splits(m)
    for c, pca, anchored in grid:
        found = []
        for train, test in splits:
            inner = _subset(m, train)
            if not enough(inner):
                continue
            head = fit_head(inner, dimension, branch, c, pca, hidden=hidden, anchored=anchored)
            held = _subset(m, test)
            k = kappa(list(_scores(head, held) >= 0.5), list(held.labels))
            if k is not None:
                found.append(k)
        score = float(np.mean(found)) if found else -1.0
        if score > best + 1e-9:
            best, chosen = score, (c, pca, anchored)
    c, pca, anchored = chosen
    return fit_head(m, dimension, branch, c, pca, hidden=hidden, anchored=anchored)


def knn_scores(train: Matrix, test: Matrix) -> np.ndarray:
    """kNN over the standardised answers and counts (kNN prompting): the share of the nearest
    labelled verdicts that were correct."""
    from sklearn.neighbors import KNeighborsClassifier

    mean, scale = train.extras.mean(axis=0), train.extras.std(axis=0)
    scale = np.where(scale < 1e-6, 1.0, scale)
    k = min(_KNN, len(train.labels))
    model = KNeighborsClassifier(n_neighbors=k).fit((train.extras - mean) / scale, train.labels)
    proba: np.ndarray = model.predict_proba((test.extras - mean) / scale)
    if True not in model.classes_:
        return np.zeros(len(test.labels))
    found: np.ndarray = proba[:, list(model.classes_).index(True)]
    return found
