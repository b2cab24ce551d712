"""How far an LLM judge agrees with people, on the labels both gave.

Label provenance decides who said what: ``labeled_by: human:<name>`` is a hand label,
``synthetic:<model>`` a judge's. A (query, target) pair labelled by both is compared; pairs
labelled by one side only are counted, never mixed in. Agreement is Cohen's kappa on
relevant/not relevant at a threshold, reported with the base rates it corrects for (kappa
is chance-corrected: a judge that calls everything relevant agrees often with people who
mostly do, and earns a kappa near 0), the confusion counts, and quadratic-weighted kappa
on the grades themselves (Cohen 1968).

When the judge also labelled pairs people did not, the share of relevant pairs over
everything the judge saw is estimated by PPI++ (``ppi_mean_ci``): the hand labels on the
overlap measure the judge's bias, which is subtracted, so the interval is valid whatever the
judge's quality; the judge's own share and the hand labels' share are given beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["agreement"]


def _kappa(observed: float, expected: float) -> float | None:
    return None if expected >= 1 else (observed - expected) / (1 - expected)


def agreement(rows: Iterable[Mapping[str, Any]], threshold: int = 1) -> dict[str, Any]:
    """Human-vs-judge agreement over label rows from any number of files (module docstring)."""
    human: dict[tuple[str, str], int] = {}
    judge: dict[tuple[str, str], int] = {}
    for row in rows:
        who = row.get("labeled_by") or ""
        key = (row["query_id"], row.get("chunk_id") or row["doc_uri"])
        if who.startswith("human:"):
            human[key] = row["relevance"]
        elif who.startswith("synthetic:"):
            judge[key] = row["relevance"]
    both = sorted(human.keys() & judge.keys())
    out: dict[str, Any] = {"threshold": threshold, "pairs": len(both), "human_only": len(human.keys() - judge.keys()),
                           "judge_only": len(judge.keys() - human.keys())}
    if not both:
        out["note"] = "no (query, target) pair carries both a human: and a synthetic: label"
        return out
    n = len(both)
    counts = {"both_relevant": 0, "human_only_relevant": 0, "judge_only_relevant": 0, "neither": 0}
    for key in both:
        h, j = human[key] >= threshold, judge[key] >= threshold
        counts["both_relevant" if h and j else "human_only_relevant" if h else "judge_only_relevant" if j else "neither"] += 1
    human_rate = (counts["both_relevant"] + counts["human_only_relevant"]) / n
    judge_rate = (counts["both_relevant"] + counts["judge_only_relevant"]) / n
    observed = (counts["both_relevant"] + counts["neither"]) / n
    expected = human_rate * judge_rate + (1 - human_rate) * (1 - judge_rate)
    kappa = _kappa(observed, expected)
    out.update(confusion=counts, observed_agreement=observed, chance_agreement=expected, kappa=kappa,
               base_rate={"human": human_rate, "judge": judge_rate}, judge_bias=judge_rate - human_rate)
    if kappa is None:
        out["note"] = "both sides gave one answer throughout: kappa is undefined"
    unlabeled = [judge[k] >= threshold for k in judge.keys() - human.keys()]
    if len(both) >= 2 and unlabeled:
        from goldkeeper.core.ppi import ppi_mean

        y = [float(human[k] >= threshold) for k in both]
        yhat = [float(judge[k] >= threshold) for k in both]
        estimate = ppi_mean(y, yhat, [float(v) for v in unlabeled], alpha=0.05)
        out["relevant_share"] = {
            "ppi": {**estimate.to_dict(), "ci": list(estimate.interval), "confidence": 0.95, "labeled": len(both),
                    "unlabeled": len(unlabeled)},
            "judge_only": estimate.judge_mean,
            "hand_labels_only": human_rate,
        }
    grades = sorted({human[k] for k in both} | {judge[k] for k in both})
    if len(grades) > 1:
        low, span = grades[0], grades[-1] - grades[0]
        h_grades = [human[k] for k in both]
        j_grades = [judge[k] for k in both]
        disagreement = sum(((a - b) / span) ** 2 for a, b in zip(h_grades, j_grades)) / n
        # Chance disagreement: every human grade against every judge grade, via their histograms.
        h_hist: dict[int, int] = {}
        j_hist: dict[int, int] = {}
        for a, b in zip(h_grades, j_grades):
            h_hist[a] = h_hist.get(a, 0) + 1
            j_hist[b] = j_hist.get(b, 0) + 1
        chance = sum(ca * cb * ((a - b) / span) ** 2 for a, ca in h_hist.items() for b, cb in j_hist.items()) / n**2
        out["weighted_kappa"] = None if chance == 0 else 1 - disagreement / chance
        out["grades"] = {"low": low, "high": grades[-1]}
    return out
