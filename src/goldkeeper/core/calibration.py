"""calibrate: how many passages to send an LLM, and when to abstain, with guarantees.

Two decisions that are usually constants somebody tuned become thresholds with
finite-sample, distribution-free guarantees, assuming only that calibration and deployment
queries are exchangeable:

- **coverage**: conformal adaptive prediction sets (Romano, Sesia and Candes, NeurIPS 2020).
  A query's retrieval scores become a softmax distribution in rank order; the set keeps every
  passage whose *exclusive* prefix mass is at most a calibrated quantile q. The conformity
  score of a calibration query is the exclusive prefix mass before its first relevant
  passage, and q is its ceil((n+1)(1-alpha))-th smallest value, the rank computed in exact
  rational arithmetic (in floating point it is one off for, say, n = 24 and alpha = 0.44).
  Then P(the set holds a relevant passage) >= 1 - alpha on the next query.
- **risk**: a risk-controlling abstention threshold (Bates, Angelopoulos, Lei, Malik and
  Jordan, JACM 2021), found by fixed-sequence testing (Learn then Test) down a grid of
  thresholds on the top score, most conservative first, each tested with the
  Hoeffding-Bentkus p-value (binomial tail from scipy.stats). The loss of a query is
  "answered (top score >= threshold) without a relevant passage in its set", and
  P(risk <= risk_alpha) >= 1 - delta over the calibration draw. A certificate that abstains
  on (nearly) every calibration query is valid and useless, and is labelled degenerate; a
  walk that stops early names the calibration size that would get past the blocking step.

The queries are shuffled with a seed into three splits: the first picks the softmax
temperature (smallest mean set among those certified) and the risk grid; the second fits
the quantile and the risk threshold; the third, which informed neither, measures coverage,
set size and risk out of sample. Choosing the temperature on the quantile's own data would
break exchangeability, invisibly in every in-sample number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "CalibrationQuery",
    "Certificate",
    "calibrate",
    "calibration_queries",
    "conformal_rank",
    "hoeffding_bentkus_p",
    "queries_for_risk",
    "set_sizes",
]

TEMPERATURES = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
DEGENERATE_ABSTENTION = 0.999


@dataclass(frozen=True)
class CalibrationQuery:
    """A query's retrieval scores in rank order, and the rank of its first relevant passage
    (None when no relevant passage was retrieved)."""

    query_id: str
    scores: tuple[float, ...]
    relevant: int | None


def calibration_queries(grades: dict[str, dict[str, int]], entries: Any, threshold: int = 1,
                        source: str = "run") -> tuple[list[CalibrationQuery], dict[str, int]]:
    """Calibration queries from judgments grouped by query (``Qrels.grades``) and a run whose
    entries carry scores: each judged query with a positive label that the run answered.
    Returns them and how many judged queries were left out, and why."""
    from goldkeeper.errors import InputError

    answered: dict[str, Any] = {}
    for entry in entries:
        if entry.scores is None:
            raise InputError(source, "calibration needs the retriever's scores (a TREC run, or run JSONL with "
                             "scores)", field="scores", found=f"none for query {entry.query_id}")
        answered[entry.query_id] = entry
    queries, excluded = [], {"no_positive_label": 0, "not_in_run": 0}
    for query_id in sorted(grades):
        labels = grades[query_id]
        if not any(grade >= threshold for grade in labels.values()):
            excluded["no_positive_label"] += 1
            continue
        entry = answered.get(query_id)
        if entry is None or not entry.ranking:
            excluded["not_in_run"] += 1
            continue
        relevant = next((i for i, key in enumerate(entry.ranking) if labels.get(key, 0) >= threshold), None)
        queries.append(CalibrationQuery(query_id, tuple(entry.scores), relevant))
    return queries, excluded


def _exact(value: float) -> Fraction:
    """The decimal a person typed: 0.44 is 11/25, not the binary float just above it."""
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


def conformal_rank(n: int, alpha: float) -> int | None:
    """ceil((n+1)(1-alpha)) in exact arithmetic; None when it exceeds n (too few queries to
    certify alpha: the honest set is then everything)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    rank = math.ceil((n + 1) * (1 - _exact(alpha)))
    return rank if rank <= n else None


def _softmax_prefix(scores: tuple[float, ...], temperature: float) -> np.ndarray:
    """Exclusive prefix sums of the softmax of ``scores`` at ``temperature``."""
    values = np.asarray(scores, dtype=float)
    weights = np.exp((values - values.max()) / temperature)
    mass = weights / weights.sum()
    return np.concatenate(([0.0], np.cumsum(mass)[:-1]))


def _conformity(query: CalibrationQuery, temperature: float) -> float:
    return float(_softmax_prefix(query.scores, temperature)[query.relevant])


def set_sizes(queries: list[CalibrationQuery], quantile: float | None, temperature: float,
              max_k: int | None = None) -> list[int]:
    """Passages kept per query: those whose exclusive prefix mass is at most ``quantile``
    (every passage when uncertified), at least one, at most ``max_k``."""
    sizes = []
    for query in queries:
        full = len(query.scores)
        kept = full if quantile is None else int(np.searchsorted(_softmax_prefix(query.scores, temperature),
                                                                 quantile, side="right"))
        sizes.append(min(max(kept, 1), max_k or full, full))
    return sizes


def hoeffding_bentkus_p(risk: float, n: int, alpha: float) -> float:
    """p-value of H0: true risk > alpha, from the empirical ``risk`` on ``n`` queries: the
    smaller of Hoeffding's bound exp(-n KL(risk || alpha)) and Bentkus' e * P(Bin(n, alpha)
    <= ceil(n risk)) (Bates et al., JACM 2021, section 3)."""
    from scipy.stats import binom

    if n <= 0 or risk >= alpha:
        return 1.0
    hoeffding = math.exp(-n * _kl(risk, alpha))
    bentkus = math.e * float(binom.cdf(math.ceil(n * risk - 1e-9), n, alpha))
    return min(1.0, hoeffding, bentkus)


def _kl(a: float, b: float) -> float:
    if a <= 0:
        return -math.log1p(-b)
    return a * math.log(a / b) + (1 - a) * math.log((1 - a) / (1 - b))


def queries_for_risk(risk: float, alpha: float, delta: float) -> int | None:
    """Calibration queries needed for Hoeffding's bound to certify an observed ``risk``
    against ``alpha`` at ``delta``: ln(1/delta) / KL(risk || alpha); None when risk >= alpha."""
    if risk >= alpha:
        return None
    return math.ceil(math.log(1 / delta) / _kl(risk, alpha))


@dataclass
class Certificate:
    alpha: float
    risk_alpha: float
    delta: float
    seed: int
    splits: dict[str, int]
    temperature: float
    temperature_sweep: list[dict[str, Any]]
    coverage: dict[str, Any]
    risk: dict[str, Any]
    held_out: dict[str, Any]
    excluded: dict[str, int] = field(default_factory=dict)
    method: dict[str, str] = field(default_factory=lambda: {
        "coverage": "split conformal adaptive prediction sets (Romano, Sesia and Candes, NeurIPS 2020), "
                    "non-randomized, exact (n+1) rank",
        "risk": "risk-controlling threshold by fixed-sequence Learn-then-Test with Hoeffding-Bentkus "
                "p-values (Bates et al., JACM 2021)",
    })

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in (
            "alpha", "risk_alpha", "delta", "seed", "splits", "temperature", "temperature_sweep", "coverage",
            "risk", "held_out", "excluded", "method")}


def _fit_quantile(queries: list[CalibrationQuery], alpha: float, temperature: float) -> float | None:
    usable = [q for q in queries if q.relevant is not None]
    rank = conformal_rank(len(usable), alpha)
    if rank is None:
        return None
    return float(np.sort([_conformity(q, temperature) for q in usable])[rank - 1])


def _losses(queries: list[CalibrationQuery], sizes: list[int], threshold: float) -> tuple[int, int]:
    """(queries answered without a relevant passage in their set, queries abstained on)."""
    bad = abstained = 0
    for query, size in zip(queries, sizes, strict=True):
        if query.scores[0] < threshold:
            abstained += 1
        elif query.relevant is None or query.relevant >= size:
            bad += 1
    return bad, abstained


def _walk(queries: list[CalibrationQuery], sizes: list[int], grid: list[float], risk_alpha: float,
          delta: float) -> dict[str, Any]:
    n = len(queries)
    chosen: dict[str, Any] | None = None
    blocked = None
    for tested, threshold in enumerate(grid, 1):
        bad, abstained = _losses(queries, sizes, threshold)
        risk = bad / n if n else 1.0
        p = hoeffding_bentkus_p(risk, n, risk_alpha)
        step = {"threshold": threshold, "empirical_risk": risk, "p_value": p,
                "abstention": abstained / n if n else 1.0, "tested": tested}
        if p > delta:  # the first failure ends the fixed sequence
            blocked = {**step, "queries_needed": queries_for_risk(risk, risk_alpha, delta)}
            break
        chosen = step
    if chosen is None:
        return {"certified": False, "threshold": None, "degenerate": False, "n": n, "blocked_by": blocked}
    out = {"certified": True, "degenerate": chosen["abstention"] >= DEGENERATE_ABSTENTION, "n": n,
           **chosen, "blocked_by": blocked}
    if math.isinf(out["threshold"]):  # certified only by abstaining on everything (JSON has no inf)
        out.update(threshold=None, abstains_on_everything=True)
    return out


def calibrate(
    queries: list[CalibrationQuery],
    *,
    alpha: float = 0.10,
    risk_alpha: float = 0.05,
    delta: float = 0.05,
    fractions: tuple[float, float, float] = (0.25, 0.5, 0.25),
    temperature: float | None = None,
    max_k: int | None = None,
    seed: int = 0,
) -> Certificate:
    """Certify an adaptive context size and an abstention threshold (module docstring).

    Queries without scores are excluded and counted; queries with no relevant passage
    retrieved stay (they can never be covered, and answering them is a loss) but cannot
    inform the coverage quantile."""
    for name, value in (("alpha", alpha), ("risk_alpha", risk_alpha), ("delta", delta)):
        if not 0 < value < 1:
            raise ValueError(f"{name} must be in (0, 1), got {value}")
    if temperature is not None and not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a finite number above 0, got {temperature}")
    if len(fractions) != 3 or any(f <= 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(f"the three split fractions must be positive and sum to 1, got {fractions}")
    scored = [q for q in queries if q.scores]
    order = np.random.default_rng(seed).permutation(len(scored))
    shuffled = [scored[i] for i in order]
    first = round(len(shuffled) * fractions[0])
    second = first + round(len(shuffled) * fractions[1])
    tuning, fitting, evaluation = shuffled[:first], shuffled[first:second], shuffled[second:]

    sweep = []
    if temperature is None:
        for candidate in TEMPERATURES:
            quantile = _fit_quantile(tuning, alpha, candidate)
            useful = [q for q in tuning if q.relevant is not None]
            mean = float(np.mean(set_sizes(useful, quantile, candidate, max_k))) if useful and quantile is not None else None
            sweep.append({"temperature": candidate, "certified": quantile is not None, "mean_k": mean})
        viable = [row for row in sweep if row["certified"]]
        temperature = min(viable, key=lambda r: (r["mean_k"], r["temperature"]))["temperature"] if viable else 1.0

    quantile = _fit_quantile(fitting, alpha, temperature)
    usable = [q for q in fitting if q.relevant is not None]
    fit_sizes = set_sizes(fitting, quantile, temperature, max_k)
    uncapped = set_sizes(fitting, quantile, temperature)
    coverage = {
        "certified": quantile is not None,
        "quantile": quantile,
        "n": len(usable),
        "minimum_n": math.ceil(1 / _exact(alpha)) - 1,
        "cap_binds": (sum(a < b for a, b in zip(fit_sizes, uncapped)) / len(fitting)) if fitting else 0.0,
    }
    coverage["guarantee_intact"] = coverage["certified"] and coverage["cap_binds"] == 0.0

    # The grid is fixed before the fitting split is looked at: quantiles of the tuning split's
    # top scores, highest (abstain most) first, after "abstain on everything".
    tops = np.array([q.scores[0] for q in tuning]) if tuning else np.array([0.0])
    grid = [math.inf, *sorted({float(v) for v in np.quantile(tops, np.linspace(1, 0, 101))}, reverse=True)]
    risk = _walk(fitting, fit_sizes, grid, risk_alpha, delta)

    held_sizes = set_sizes(evaluation, quantile, temperature, max_k)
    with_relevant = [(q, k) for q, k in zip(evaluation, held_sizes, strict=True) if q.relevant is not None]
    held = {
        "n": len(evaluation),
        "coverage": (sum(q.relevant < k for q, k in with_relevant) / len(with_relevant)) if with_relevant else None,
        "mean_k": float(np.mean(held_sizes)) if held_sizes else None,
    }
    if risk["certified"] and evaluation:
        threshold = math.inf if risk["threshold"] is None else risk["threshold"]
        bad, abstained = _losses(evaluation, held_sizes, threshold)
        held.update(risk=bad / len(evaluation), abstention=abstained / len(evaluation))
    return Certificate(
        alpha=alpha, risk_alpha=risk_alpha, delta=delta, seed=seed,
        splits={"temperature": len(tuning), "calibration": len(fitting), "evaluation": len(evaluation)},
        temperature=temperature, temperature_sweep=sweep, coverage=coverage, risk=risk, held_out=held,
        excluded={"no_scores": len(queries) - len(scored)} if len(queries) > len(scored) else {},
    )
