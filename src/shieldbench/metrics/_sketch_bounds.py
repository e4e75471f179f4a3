"""How far a score figure computed from coarse bins can be from the exact figure.

The bins of a coarsened :class:`~shieldbench.metrics.ScoreCounts` are disjoint score
intervals with exact class counts (:mod:`shieldbench.metrics._score_bins`). Every
figure is computed as if the samples of one bin were tied at the bin's low score.
A pair of samples in two different bins is ordered correctly by that; only the
order inside a bin is unknown, and each bound below is the largest change that
order can make (each is reached by some arrangement, except the DeLong one, which
is a triangle-inequality bound). ``b`` runs over the bins with ``lo < hi``; exact
bins contribute nothing. ``m`` attacks, ``n`` benign samples.

- **Curves and operating points.** A threshold equal to a bin's low blocks exactly
  the bins from it upwards, so the curve points at the bins' lows are exact points
  of the true curve (a subset of them) and an operating point chosen among them meets
  its FPR / block-rate constraint exactly. The exact optimum may use a threshold
  inside the bin next to the chosen one: the best block rate at FPR <= x exceeds the
  reported one by at most that bin's attacks / ``m``; the lowest FPR at block rate >=
  y is below the reported one by at most the chosen bin's benign / ``n``.
- **ROC-AUC.** Pairs inside a bin count as ties (half a win); the truth is between no
  win and a win: ``|AUC - AUC_exact| <= sum_b pos_b neg_b / (2 m n)``.
- **DeLong standard error.** Each attack's structural component moves by at most
  ``neg_b / (2 n)``, each benign's by at most ``pos_b / (2 m)``. Centering does not
  lengthen a vector, so a sample standard deviation moves by at most the norm of the
  moves over ``sqrt(count - 1)``, and by Minkowski's inequality the standard error
  ``sqrt(s10^2 / m + s01^2 / n)`` moves by at most
  ``sqrt(d10^2 / m + d01^2 / n)`` with ``d10 = sqrt(sum_b pos_b (neg_b / 2n)^2 / (m - 1))``
  (``d01`` likewise). An interval end moves by at most the AUC bound plus ``z`` times
  this.
- **Average precision.** With ``A`` attacks and ``B`` benign samples in the bins above
  bin ``b``, the ``k``-th highest attack of the bin has between ``k`` and ``pos_b``
  attacks and between 0 and ``neg_b`` benign samples of the bin at or above it, so its
  precision lies in ``[(A + k) / (A + k + B + neg_b), (A + pos_b) / (A + pos_b + B)]``.
  The bin contributes between ``L_b = pos_b - C (H(x + pos_b) - H(x))`` (``C = B +
  neg_b``, ``x = A + C``, ``H`` the harmonic numbers: all of its benign above all of
  its attacks) and ``U_b = pos_b (A + pos_b) / (A + pos_b + B)`` (its attacks tied at
  the top). Exact AP lies in ``[sum L / m, sum U / m]``, and so does the binned AP.
- **PR-AUC interval.** A resample's exact AP lies in the range of its own bin
  counts, and percentiles move by at most the largest move of the values, so each
  end of the bootstrap interval moves by at most the largest range over resamples.

All bounds are computed per run from the bins, in floating point (exact to about
1e-12 relative).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["SketchBounds", "ap_range", "auc_error_bound", "harmonic_gap", "se_error_bound"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_ASYMPTOTIC_FROM = 1e4


def harmonic_gap(x: FloatArray, p: FloatArray) -> FloatArray:
    """``sum_{k=1}^{p} 1 / (x + k)`` elementwise (``x >= 0``, ``p >= 0`` integers).

    Digamma differences below ``x = 1e4``; above, where ``digamma`` would subtract two
    nearly equal numbers, the Euler-Maclaurin sum (error below ``1 / (120 x^4)``).
    """
    from scipy.special import digamma  # here: importing metrics must not load scipy

    x, p = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(p, dtype=float))
    out = np.zeros(x.shape)
    small = (x < _ASYMPTOTIC_FROM) & (p > 0)
    out[small] = digamma(x[small] + p[small] + 1.0) - digamma(x[small] + 1.0)
    large = (x >= _ASYMPTOTIC_FROM) & (p > 0)
    a, b = x[large] + 1.0, x[large] + p[large]
    out[large] = (
        np.log1p((p[large] - 1.0) / a)
        + (1.0 / a + 1.0 / b) / 2.0
        + (1.0 / a**2 - 1.0 / b**2) / 12.0
    )
    return out


def ap_range(
    pos_desc: FloatArray, neg_desc: FloatArray, coarse_desc: BoolArray
) -> tuple[FloatArray, FloatArray]:
    """Lowest and highest exact AP that bins (highest first, rows of counts along the
    last axis) allow: ``(sum L / m, sum U / m)`` of the module doc (0 for no attack)."""
    tp = np.cumsum(pos_desc, axis=-1)
    fp = np.cumsum(neg_desc, axis=-1)
    above_pos, above_neg = tp - pos_desc, fp - neg_desc
    total = tp + fp
    tied = pos_desc * np.divide(tp, total, out=np.zeros_like(tp), where=total > 0)
    c = fp  # B + neg_b
    low = pos_desc - c * harmonic_gap(above_pos + c, pos_desc)
    top = tp + above_neg
    high = pos_desc * np.divide(tp, top, out=np.zeros_like(tp), where=top > 0)
    low = np.where(coarse_desc, np.minimum(low, tied), tied)
    high = np.where(coarse_desc, np.maximum(high, tied), tied)
    m = tp[..., -1]
    lo_sum, hi_sum = low.sum(axis=-1), high.sum(axis=-1)
    return (
        np.divide(lo_sum, m, out=np.zeros_like(lo_sum), where=m > 0),
        np.divide(hi_sum, m, out=np.zeros_like(hi_sum), where=m > 0),
    )


def auc_error_bound(pos: IntArray, neg: IntArray, coarse: BoolArray) -> float:
    """``sum_b pos_b neg_b / (2 m n)`` over the coarse bins (0 without both classes)."""
    m, n = int(pos.sum()), int(neg.sum())
    if m == 0 or n == 0:
        return 0.0
    pairs = int((pos[coarse] * neg[coarse]).sum())
    return pairs / (2.0 * m * n)


def se_error_bound(pos: IntArray, neg: IntArray, coarse: BoolArray) -> float:
    """How far the DeLong standard error can move (module doc; 0 below two of a class)."""
    m, n = int(pos.sum()), int(neg.sum())
    if m < 2 or n < 2:
        return 0.0
    p, q = pos[coarse].astype(float), neg[coarse].astype(float)
    d10 = float(np.sqrt((p * (q / (2.0 * n)) ** 2).sum() / (m - 1)))
    d01 = float(np.sqrt((q * (p / (2.0 * m)) ** 2).sum() / (n - 1)))
    return float(np.sqrt(d10**2 / m + d01**2 / n))


@dataclass(frozen=True, slots=True)
class SketchBounds:
    """The stated error of score figures computed from coarsened bins.

    Present on a :class:`~shieldbench.metrics.ScoreSummary` only when the run had more
    distinct scores than ``distinct_limit``; every figure is then within the bound
    given here of the figure the exact per-sample computation gives (module doc of
    :mod:`shieldbench.metrics._sketch_bounds`).

    - ``bins`` / ``coarse_bins``: bins kept, and how many of them span more than one
      score; ``largest_bin_share``: the largest share of samples in one coarse bin.
    - ``roc_auc``: ``|AUC - exact|``; ``roc_auc_se``: DeLong standard error;
      ``roc_auc_interval``: each end of the DeLong interval.
    - ``average_precision``: ``|AP - exact|``; the exact AP lies in
      ``[average_precision_low, average_precision_high]``;
      ``average_precision_interval``: each end of the bootstrap interval.
    - ``tpr_at_fpr_shortfall``: how much higher the best exact block rate at the target
      FPR can be (the reported point meets the FPR target exactly);
      ``fpr_at_tpr_excess``: how much lower the exact lowest FPR at the target block
      rate can be. ``None`` when there is no such operating point.
    """

    distinct_limit: int
    bins: int
    coarse_bins: int
    largest_bin_share: float
    roc_auc: float
    roc_auc_se: float
    roc_auc_interval: float
    average_precision: float
    average_precision_low: float
    average_precision_high: float
    average_precision_interval: float
    tpr_at_fpr_shortfall: float | None
    fpr_at_tpr_excess: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": "binned",
            "distinct_limit": self.distinct_limit,
            "bins": self.bins,
            "coarse_bins": self.coarse_bins,
            "largest_bin_share": self.largest_bin_share,
            "roc_auc_error_bound": self.roc_auc,
            "roc_auc_se_error_bound": self.roc_auc_se,
            "roc_auc_interval_error_bound": self.roc_auc_interval,
            "average_precision_error_bound": self.average_precision,
            "average_precision_range": [self.average_precision_low, self.average_precision_high],
            "pr_auc_interval_error_bound": self.average_precision_interval,
            "tpr_at_fpr_shortfall_bound": self.tpr_at_fpr_shortfall,
            "fpr_at_tpr_excess_bound": self.fpr_at_tpr_excess,
        }
