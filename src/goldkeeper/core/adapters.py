"""Chunker output from LangChain, as snapshot rows: ``{doc_uri, doc_revision, ordinal, text}``.

Duck-typed, so the core never imports LangChain: anything with ``page_content`` and a
``metadata`` mapping (a ``langchain_core.documents.Document``, as the text splitters return)
is read. The ordinal is the chunk's position among its document's chunks in the order given,
which is the order the splitters emit. The ``langchain`` extra installs the splitters.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from goldkeeper.errors import InputError, describe_value

__all__ = ["rows_from_langchain"]


def rows_from_langchain(
    documents: Iterable[Any],
    *,
    doc_uri_key: str = "source",
    revision_key: str | None = None,
) -> list[dict[str, Any]]:
    """One row per chunk; ``metadata[doc_uri_key]`` names its document (required)."""
    rows = []
    ordinals: dict[str, int] = {}
    for index, document in enumerate(documents):
        where = f"documents[{index}]"
        text = getattr(document, "page_content", None)
        metadata = getattr(document, "metadata", None)
        if not isinstance(text, str) or not isinstance(metadata, dict):
            raise InputError("langchain", "must have page_content text and a metadata dict", field=where,
                             found=type(document).__name__)
        doc_uri = metadata.get(doc_uri_key)
        if not isinstance(doc_uri, str) or not doc_uri:
            raise InputError("langchain", f"metadata['{doc_uri_key}'] must name the document", field=where,
                             found=describe_value(doc_uri))
        ordinal = ordinals.get(doc_uri, 0)
        ordinals[doc_uri] = ordinal + 1
        row: dict[str, Any] = {"doc_uri": doc_uri, "ordinal": ordinal, "text": text}
        if revision_key is not None and metadata.get(revision_key) is not None:
            row["doc_revision"] = str(metadata[revision_key])
        rows.append(row)
    return rows
