"""A suite's configuration: ``suites/<suite>.json`` on the storage root (spec/suites.md).

What to score, how, and against which corpus, written once (``goldkeeper suite init``) and
read by every flow that is given only the suite's name: the re-index lifecycle, the nightly
evaluation and the re-judgment.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from goldkeeper.models.records import MAX_RELEVANCE

__all__ = ["JudgeConfig", "SuiteConfig"]

_CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,?#LW-]+$")


class JudgeConfig(BaseModel):
    """The suite's LLM judge (spec/judge.md): after a re-index it grades the queued labels'
    candidates first, and people audit a sample of its work instead of the whole queue."""

    model_config = ConfigDict(extra="forbid", title="goldkeeper judge configuration")

    base_url: str = Field(min_length=1, description="An OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")
    model: str = Field(min_length=1, description="The model's name, as the endpoint knows it.")
    api_key_env: str | None = Field(None, description="The environment variable holding the API key, on the worker.")
    prompt_url: str | None = Field(None, description="A prompt template (spec/judge.md); none: the default prompt.")
    spans: bool = Field(False, description="The judge also quotes the words that answer; its labels carry them as "
                                           "their span, proposed by the judge (spec/spans.md).")
    concurrency: int = Field(16, ge=1, description="Calls in flight.")
    rate: float | None = Field(None, gt=0, description="At most this many calls per second.")
    timeout: float = Field(60.0, gt=0, description="Seconds per call.")
    retries: int = Field(3, ge=0, description="Retries of a transient failure (timeout, 429, 5xx).")
    audit_width: float | None = Field(
        0.2, gt=0, le=1, description="People audit enough queries for a 95% interval this wide from them alone.")
    audit_at_most: int | None = Field(None, ge=2, description="People audit at most this many queries.")
    seed: int = Field(0, description="The audit sample's seed.")
    kappa_floor: float | None = Field(
        None, ge=-1, le=1, description="Below this kappa (judge against people on the audit) the judge is set aside.")

    @field_validator("base_url")
    @classmethod
    def _endpoint(cls, base_url: str) -> str:
        if not re.match(r"^https?://[^/\s]+", base_url):
            raise ValueError(f"must be an http:// or https:// URL, got {base_url!r}")
        return base_url


class SuiteConfig(BaseModel):
    """One suite: its runs, cutoffs and gates, its live corpus, and when it is scored."""

    model_config = ConfigDict(extra="forbid", title="goldkeeper suite configuration")

    format: str = Field("goldkeeper-suite/1", pattern=r"^goldkeeper-suite/1$")
    suite: str = Field(min_length=1, description="The suite's name; its slug names its files on storage.")
    runs: list[str] = Field(
        default_factory=list,
        description="Run files (JSONL or TREC, any fsspec URL) scored on every evaluation of the suite, "
        "each a system of the suite, named by its file stem when there are several.",
    )
    k: list[int] = Field(default_factory=lambda: [10], min_length=1, description="Cutoffs.")
    gates: list[str] = Field(default_factory=list, description="Gate expressions (spec/gates.md), e.g. recall@10:0.7.")
    corpus_url: str | None = Field(
        None, description="The live corpus snapshot (manifest.json or corpus.json); each re-index updates it."
    )
    chunker: str | None = Field(
        None, description="Chunker fingerprint, for re-index events that name chunker output but no chunker."
    )
    schedule: str | None = Field(
        None, description="A cron expression (UTC) for the nightly evaluation; none: scored on events only."
    )
    max_grade: int = Field(1, ge=1, lt=MAX_RELEVANCE + 1, description="The top of the suite's relevance scale, for reviewers.")
    judge: JudgeConfig | None = Field(None, description="An LLM judge that answers the queue first; none: people answer all of it.")

    @field_validator("runs")
    @classmethod
    def _runs(cls, runs: list[str]) -> list[str]:
        for run in runs:
            if not run.strip():
                raise ValueError("a run location may not be empty")
        if len(set(runs)) != len(runs):
            raise ValueError("a run is listed twice")
        return runs

    @field_validator("k")
    @classmethod
    def _cutoffs(cls, k: list[int]) -> list[int]:
        if any(value < 1 for value in k):
            raise ValueError("cutoffs are positive integers")
        return sorted(set(k))

    @field_validator("schedule")
    @classmethod
    def _cron(cls, schedule: str | None) -> str | None:
        if schedule is None:
            return None
        fields = schedule.split()
        if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
            raise ValueError(f"must be a cron expression of five fields (minute hour day month weekday), got {schedule!r}")
        return " ".join(fields)
