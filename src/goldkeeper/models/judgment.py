"""One relevance judgment: a line of a judgments JSONL file (spec/formats.md).

A strict superset of a TREC qrels line. Unknown fields are kept in their original order and
written back last, so tools that add their own fields can round-trip through goldkeeper.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["JUDGMENT_FIELDS", "Judgment"]

#: Schema order: the canonical write order of the known fields.
JUDGMENT_FIELDS: tuple[str, ...] = (
    "query_id",
    "query",
    "doc_uri",
    "chunk_id",
    "text_sha",
    "chunk_text",
    "relevance",
    "corpus_fingerprint",
    "labeled_by",
    "labeled_at",
    "stratum",
    "notes",
)


class Judgment(BaseModel):
    """One relevance label. ``chunk_id`` absent means a document-level label."""

    model_config = ConfigDict(extra="allow", frozen=False, title="goldkeeper judgment")

    query_id: str = Field(min_length=1, description="Stable id for the query.")
    query: str | None = Field(None, description="Query text; on at least one row per query.")
    doc_uri: str = Field(min_length=1, description="Canonical source document uri.")
    chunk_id: str | None = Field(
        None, description="Content-addressed chunk id (c1:...); absent for document-level labels."
    )
    text_sha: str | None = Field(None, description="t1: hash of the normalized labeled text.")
    chunk_text: str | None = Field(None, description="The labeled text; enables SPLIT detection.")
    relevance: int = Field(ge=0, lt=1024, description="Graded relevance, 0 = not relevant.")
    corpus_fingerprint: str | None = Field(
        None, description="State of corpus+chunker this label was made against."
    )
    labeled_by: str | None = Field(None, description="Provenance: 'human:<name>' or 'synthetic:<model>'.")
    labeled_at: str | None = Field(None, description="ISO 8601 date-time of the label.")
    stratum: str | None = Field(None, description="Query category, for per-stratum reporting.")
    notes: str | None = None

    @property
    def key(self) -> str:
        """What a ranking entry must equal to hit this label: chunk_id, else doc_uri."""
        return self.chunk_id if self.chunk_id is not None else self.doc_uri

    @property
    def extra(self) -> dict[str, Any]:
        """Unknown fields, in their original order."""
        return self.__pydantic_extra__ or {}

    def canonical_dict(self) -> dict[str, Any]:
        """Known fields in schema order (unset ones omitted), then unknown ones in order."""
        values = self.__dict__
        out = {name: values[name] for name in JUDGMENT_FIELDS if values[name] is not None}
        if self.__pydantic_extra__:
            out.update(self.__pydantic_extra__)
        return out
