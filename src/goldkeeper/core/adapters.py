"""Chunker output from LangChain and LlamaIndex, as snapshot rows:
``{doc_uri, doc_revision, ordinal, text, start_index}``.

Duck-typed, so the core never imports either library:

- LangChain: anything with ``page_content`` and a ``metadata`` mapping (the
  ``langchain_core.documents.Document`` the text splitters return); the document is
  ``metadata["source"]``, the offset ``metadata["start_index"]`` (``add_start_index=True``).
- LlamaIndex: nodes with ``get_content()`` (or ``text``) and ``metadata`` (the ``TextNode``
  a node parser returns); the document is ``ref_doc_id`` (the source ``Document``'s id), the
  offset ``start_char_idx``.

The ordinal is the chunk's position among its document's chunks in the order given, which is
the order the splitters emit. Extras ``langchain`` and ``llamaindex`` install the libraries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from goldkeeper.errors import InputError, describe_value

__all__ = ["rows_from_langchain", "rows_from_llamaindex"]


def _rows(items: Iterable[Any], source: str, read: Callable[[Any], tuple[Any, Any, Any, Any]],
          revision_key: str | None, naming: str) -> list[dict[str, Any]]:
    rows = []
    ordinals: dict[str, int] = {}
    for index, item in enumerate(items):
        where = f"{source}[{index}]"
        text, metadata, doc_uri, start = read(item)
        if not isinstance(text, str) or not isinstance(metadata, dict):
            raise InputError(source, "must have text and a metadata dict", field=where, found=type(item).__name__)
        if not isinstance(doc_uri, str) or not doc_uri:
            raise InputError(source, f"{naming} must name the document", field=where, found=describe_value(doc_uri))
        ordinal = ordinals.get(doc_uri, 0)
        ordinals[doc_uri] = ordinal + 1
        row: dict[str, Any] = {"doc_uri": doc_uri, "ordinal": ordinal, "text": text}
        if revision_key is not None and metadata.get(revision_key) is not None:
            row["doc_revision"] = str(metadata[revision_key])
        if type(start) is int and start >= 0:
            row["start_index"] = start
        rows.append(row)
    return rows


def rows_from_langchain(
    documents: Iterable[Any], *, doc_uri_key: str = "source", revision_key: str | None = None,
) -> list[dict[str, Any]]:
    """One row per LangChain chunk; ``metadata[doc_uri_key]`` names its document (required)."""
    def read(document: Any) -> tuple[Any, Any, Any, Any]:
        metadata = getattr(document, "metadata", None)
        found = metadata if isinstance(metadata, dict) else {}
        return getattr(document, "page_content", None), metadata, found.get(doc_uri_key), found.get("start_index")

    return _rows(documents, "documents", read, revision_key, f"metadata['{doc_uri_key}']")


def rows_from_llamaindex(
    nodes: Iterable[Any], *, doc_uri_key: str | None = None, revision_key: str | None = None,
) -> list[dict[str, Any]]:
    """One row per LlamaIndex node; its document is ``ref_doc_id``, or ``metadata[doc_uri_key]``."""
    def read(node: Any) -> tuple[Any, Any, Any, Any]:
        metadata = getattr(node, "metadata", None)
        getter = getattr(node, "get_content", None)
        text = getter() if callable(getter) else getattr(node, "text", None)
        found = metadata if isinstance(metadata, dict) else {}
        doc_uri = found.get(doc_uri_key) if doc_uri_key else getattr(node, "ref_doc_id", None)
        return text, metadata, doc_uri, getattr(node, "start_char_idx", None)

    return _rows(nodes, "nodes", read, revision_key, f"metadata['{doc_uri_key}']" if doc_uri_key else "ref_doc_id")
