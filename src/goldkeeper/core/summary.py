"""Repeated samples of a non-deterministic metric, summarized with an honest interval."""

from __future__ import annotations

import math
from collections.abc import Sequence

from goldkeeper.errors import InputError, describe_value
from goldkeeper.models.report import Measurement

__all__ = ["parse_samples", "summarize"]

_ROUND = 12


def summarize(samples: Sequence[float], confidence: float = 0.95) -> Measurement:
    """Mean, sample standard deviation and the Student-t interval of the mean.

    The critical value is scipy.stats.t.ppf at n - 1 degrees of freedom (exact at every n;
    the reference implementation tabulates it and caps the table at 120). One sample yields
    no interval, since one draw says nothing about spread; the interval is not clamped to
    the metric's range, since a clamped lower bound could pass a ``ci-lower`` gate.
    NaN, infinite and empty input are refused.
    """
    values = [float(s) for s in samples]
    if not values:
        raise ValueError("summarize: needs at least one sample, got none")
    for index, value in enumerate(values):
        if not math.isfinite(value):
            raise ValueError(f"summarize: sample {index}: must be a finite number, got {value}")
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return Measurement(value=round(mean, _ROUND), n=n, deterministic=False)
    stdev = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    from scipy import stats  # lazily: scipy.stats costs half a second to import

    margin = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * stdev / math.sqrt(n)
    return Measurement(
        value=round(mean, _ROUND),
        n=n,
        stdev=round(stdev, _ROUND),
        ci=(round(mean - margin, _ROUND), round(mean + margin, _ROUND)),
        deterministic=False,
    )


def parse_samples(text: str, source: str) -> list[float]:
    """Repeated samples of one metric: a JSON array of numbers, or one number a line."""
    import json

    stripped = text.strip()
    if stripped.startswith("["):
        try:
            values = json.loads(stripped)
        except ValueError as error:
            raise InputError(source, f"not a JSON array of numbers ({error})", field="samples") from None
        for index, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InputError(source, "must be a finite number", field=f"samples[{index}]",
                                 found=describe_value(value))
        numbers = [float(v) for v in values]
    else:
        numbers = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    numbers.append(float(line))
                except ValueError:
                    numbers.append(math.nan)
                if not math.isfinite(numbers[-1]):
                    raise InputError(source, "must be a finite number", line=number, field="sample",
                                     found=describe_value(line.strip()))
    if not numbers:
        raise InputError(source, "holds no sample", field="samples", found="nothing")
    return numbers
