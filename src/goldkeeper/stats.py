"""goldkeeper's statistics, by name: what a retrieval evaluation must report beyond a mean.

    clopper_pearson(successes, n, confidence=0.95) -> (lo, hi)     exact binomial interval
    bca_interval(values, confidence=0.95, resamples=10000, seed=0) -> (lo, hi)
    paired_permutation_test(a, b, alternative="two-sided", resamples=10000, seed=0) -> p
    min_attainable_p(differing_pairs) -> p                            2 / 2^d
    holm(pvalues) -> adjusted
    betting_cs(stream, alpha=0.05) -> (lower[], upper[])             anytime-valid, values in [0, 1]
    paired_gate(candidate, baseline, alpha=0.05, seed=None) -> PairedVerdict   ... of a paired difference
    ppi_mean_ci(y, yhat, yhat_unlabeled, alpha=0.05) -> (lo, hi)       PPI++ with an LLM judge
    ppi_mean(y, yhat, yhat_unlabeled, alpha=0.05) -> PPIEstimate       the same, with .statement()
    summarize(samples) -> Measurement                                 Student-t, repeated samples
    power_analysis(differences | n and sd, ...) -> dict               what a comparison can resolve
    resolution_ladders(n, alpha=0.05, power=0.8) -> dict              ... and a gold set, with no run
    audit(n, metric, value, baseline=None, ...) -> dict                what a published figure supports

Each names its source in its own docstring; all are seeded and deterministic.
"""

from goldkeeper.core.audit import audit
from goldkeeper.core.intervals import bca_interval, clopper_pearson
from goldkeeper.core.power import power_analysis, resolution_ladders
from goldkeeper.core.ppi import PPIEstimate, ppi_mean, ppi_mean_ci
from goldkeeper.core.sequential import PairedVerdict, betting_cs, paired_cs, paired_gate
from goldkeeper.core.significance import holm, min_attainable_p, paired_permutation_test
from goldkeeper.core.summary import summarize

__all__ = [
    "PPIEstimate",
    "PairedVerdict",
    "audit",
    "bca_interval",
    "betting_cs",
    "clopper_pearson",
    "holm",
    "min_attainable_p",
    "paired_cs",
    "paired_gate",
    "paired_permutation_test",
    "power_analysis",
    "ppi_mean",
    "ppi_mean_ci",
    "resolution_ladders",
    "summarize",
]
