"""Other libraries' objects as goldkeeper's values, duck-typed so the core imports none of them.

Judgments and runs, from the IR libraries (``judgments_from``, ``run_from``; ``score`` takes
any of these directly):

- a nested mapping, ``{query_id: {doc_id: grade}}`` or ``{query_id: {doc_id: score}}``: what
  pytrec_eval takes, BEIR's ``EvaluateRetrieval`` returns and ranx's ``to_dict`` gives;
- ranx ``Qrels`` and ``Run`` objects;
- pandas DataFrames in TREC columns: ``query_id`` (or ``q_id``, ``qid``), ``doc_id`` (or
  ``docno``), and ``relevance`` (or ``label``, ``score``) for qrels, ``score`` for runs: the
  frames ir_measures, ranx and PyTerrier use;
- iterables of records with ``query_id``, ``doc_id`` and ``relevance`` (ir_datasets'
  ``TrecQrel``, ir_measures' ``Qrel``) or ``score`` (ir_datasets' ``GenericScoredDoc``,
  ir_measures' ``ScoredDoc``);
- goldkeeper's own ``Judgment``/``RunEntry`` models or mappings of their fields.

Each is read by the rules of its file format (core.nested): integer grades up to 1023 with
negatives as 0, rankings in trec_eval's order, an id given as an integer is its decimal
spelling, and anything else is an ``InputError`` naming the place, or a ``TypeError`` saying
what is accepted.

Chunker output from LangChain and LlamaIndex, as snapshot rows:
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

from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import chain
from typing import TYPE_CHECKING, Any

from goldkeeper.errors import InputError, describe_value, is_file_name

if TYPE_CHECKING:
    from goldkeeper.models.judgment import Judgment
    from goldkeeper.models.run import RunEntry

__all__ = ["judgment_rows", "judgments_from", "rows_from_langchain", "rows_from_llamaindex", "run_from", "run_rows"]

_QUERY_COLUMNS = ("query_id", "q_id", "qid")
_DOC_COLUMNS = ("doc_id", "docno")
_VALUE_COLUMNS = {"qrels": ("relevance", "label", "score"), "run": ("score",)}
_ACCEPTED = {
    "qrels": "Judgment models or mappings, a {query_id: {doc_id: grade}} mapping, a ranx Qrels, a DataFrame "
             "with query_id, doc_id and relevance columns, or records with query_id, doc_id and relevance",
    "run": "RunEntry models or mappings, a {query_id: {doc_id: score}} mapping, a ranx Run, a DataFrame with "
           "query_id, doc_id and score columns, or records with query_id, doc_id and score",
}


def _nested(triples: Iterable[tuple[Any, Any, Any]], source: str) -> dict[Any, dict[Any, Any]]:
    """``{query: {doc: value}}`` from rows, refusing a (query, doc) pair given twice."""
    out: dict[Any, dict[Any, Any]] = {}
    for index, (query, doc, value) in enumerate(triples):
        docs = out.setdefault(query, {})
        if doc in docs:
            raise InputError(source, "names one document twice for one query", field=f"row {index}",
                             found=f"{describe_value(query)}, {describe_value(doc)}")
        docs[doc] = value
    return out


def _frame_triples(frame: Any, kind: str, source: str) -> Iterator[tuple[Any, Any, Any]]:
    columns = [str(c) for c in frame.columns]
    picked = [next((name for name in names if name in columns), None)
              for names in (_QUERY_COLUMNS, _DOC_COLUMNS, _VALUE_COLUMNS[kind])]
    if None in picked:
        value = "relevance" if kind == "qrels" else "score"
        raise InputError(source, f"a DataFrame of {kind} has columns query_id, doc_id and {value}",
                         field="columns", found=", ".join(columns) or "none")
    return zip(*(frame[name].tolist() for name in picked))


def _record_triples(records: Iterable[Any], value: str, source: str) -> Iterator[tuple[Any, Any, Any]]:
    for index, record in enumerate(records):
        try:
            yield record.query_id, record.doc_id, getattr(record, value)
        except AttributeError:
            raise InputError(source, f"every record has query_id, doc_id and {value}", field=f"row {index}",
                             found=type(record).__name__) from None


def _foreign(value: Any, kind: str, source: str) -> Any:
    """The nested mapping a foreign object stands for, or the iterable of goldkeeper's own rows."""
    if is_file_name(value):
        reader = "goldkeeper.read_judgments(path)" if kind == "qrels" else "goldkeeper.read_run(path)"
        raise TypeError(f"{source} must be rows, not {type(value).__name__} {str(value)[:60]!r}; "
                        f"read a file with {reader}")
    if type(value).__name__ in ("Qrels", "Run") and callable(getattr(value, "to_dict", None)):
        return value.to_dict()  # ranx
    if isinstance(value, Mapping):
        return value
    if hasattr(value, "columns") and hasattr(value, "itertuples"):  # a pandas DataFrame
        return _nested(_frame_triples(value, kind, source), source)
    try:
        items = iter(value)
    except TypeError:
        raise TypeError(f"{source}: {type(value).__name__} is not accepted; give {_ACCEPTED[kind]}") from None
    first = next(items, None)
    if first is None:
        return []
    rest = chain([first], items)
    if hasattr(first, "doc_id") and hasattr(first, "query_id"):
        return _nested(_record_triples(rest, "relevance" if kind == "qrels" else "score", source), source)
    own = ("doc_uri", "relevance") if kind == "qrels" else ("ranking",)
    if not isinstance(first, Mapping) and not all(hasattr(first, name) for name in own):
        raise TypeError(f"{source}: an iterable of {type(first).__name__} is not accepted; give {_ACCEPTED[kind]}")
    return rest


def judgment_rows(value: Any, source: str = "judgments") -> Iterable[Any]:
    """``score``'s judgments: foreign objects as ``Judgment`` models, goldkeeper's own rows
    (models or mappings, checked by the scorer) passed through."""
    from goldkeeper.core.nested import qrels_from_mapping

    found = _foreign(value, "qrels", source)
    return qrels_from_mapping(found, source) if isinstance(found, Mapping) else found


def run_rows(value: Any, source: str = "run") -> Iterable[Any]:
    """``score``'s run: foreign objects as ``RunEntry`` models, its own passed through."""
    from goldkeeper.core.nested import run_from_mapping

    found = _foreign(value, "run", source)
    return run_from_mapping(found, source) if isinstance(found, Mapping) else found


def judgments_from(value: Any, *, as_chunk_ids: bool = False, source: str = "judgments") -> list[Judgment]:
    """``Judgment`` models from any of the forms above; ``as_chunk_ids`` reads doc ids as
    chunk ids (as ``convert --as-chunk-ids`` does)."""
    from goldkeeper.core.judgments import check_row
    from goldkeeper.core.nested import qrels_from_mapping
    from goldkeeper.models.judgment import Judgment

    found = _foreign(value, "qrels", source)
    if isinstance(found, Mapping):
        return qrels_from_mapping(found, source, as_chunk_ids=as_chunk_ids)
    return [row if isinstance(row, Judgment) else Judgment.model_construct(**check_row(dict(row), source, number))
            for number, row in enumerate(found, start=1)]


def run_from(value: Any, *, source: str = "run") -> list[RunEntry]:
    """``RunEntry`` models from any of the forms above."""
    from goldkeeper.core.runs import check_run_row

    return [row if hasattr(row, "ranking") else check_run_row(dict(row), source, number)
            for number, row in enumerate(run_rows(value, source), start=1)]


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
