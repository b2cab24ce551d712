"""One relevance judgment: a line of a judgments JSONL file (spec/formats.md).

A strict superset of a TREC qrels line. Unknown fields are kept in their original order and
written back last, so tools that add their own fields can round-trip through goldkeeper.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from goldkeeper.models.records import JUDGMENT_FIELDS, JUDGMENT_ROW, MAX_RELEVANCE, FieldSpec, canonical_judgment

__all__ = ["JUDGMENT_FIELDS", "Judgment", "Span"]


class Span(BaseModel):
    """The passage that makes a label true (spec/spans.md): W3C Web Annotation's
    TextPositionSelector (``start``, ``end``: characters of the document text) and
    TextQuoteSelector (``exact``, ``prefix``, ``suffix``)."""

    model_config = ConfigDict(extra="forbid", title="goldkeeper span")

    start: int = Field(ge=0, description="First character of the passage in the document's text (code points).")
    end: int = Field(gt=0, description="One past its last character; exact is end - start characters.")
    exact: str = Field(min_length=1, description="The passage's text.")
    prefix: str | None = Field(None, description="Text just before it (goldkeeper keeps 32 characters).")
    suffix: str | None = Field(None, description="Text just after it.")
    proposed_by: str | None = Field(
        None, description="Who proposed the span when nobody confirmed it (synthetic:<model>, the judge).")


class _JudgmentBase(BaseModel):
    """What every judgment does; its fields come from ``records.JUDGMENT_ROW``."""

    model_config = ConfigDict(extra="allow", frozen=False, title="goldkeeper judgment")

    @property
    def key(self) -> str:
        """What a ranking entry must equal to hit this label: chunk_id, else doc_uri."""
        return self.chunk_id if self.chunk_id is not None else self.doc_uri  # type: ignore[attr-defined]

    @property
    def extra(self) -> dict[str, Any]:
        """Unknown fields, in their original order."""
        return self.__pydantic_extra__ or {}

    def canonical_dict(self) -> dict[str, Any]:
        """Known fields in schema order (unset ones omitted), then unknown ones in order."""
        values = self.__dict__
        if isinstance(values.get("span"), BaseModel):  # validated, not constructed from a checked row
            values = {**values, "span": values["span"].model_dump(exclude_none=True)}
        return canonical_judgment(values, self.__pydantic_extra__)


def _field(spec: FieldSpec) -> tuple[Any, Any]:
    described = {} if spec.description is None else {"description": spec.description}
    if spec.kind == "id":
        return str, Field(min_length=1, **described)
    if spec.kind == "grade":
        return int, Field(ge=0, lt=MAX_RELEVANCE + 1, **described)
    if spec.kind == "span":
        return Span | None, Field(None, **described)
    return str | None, Field(None, **described)


Judgment = create_model(  # type: ignore[call-overload]
    "Judgment",
    __base__=_JudgmentBase,
    __module__=__name__,
    __doc__="One relevance label. ``chunk_id`` absent means a document-level label.",
    **{spec.name: _field(spec) for spec in JUDGMENT_ROW},
)
