"""Chunks read straight from the vector store that holds them (spec/stores.md): LanceDB and
Chroma (embedded), Qdrant (its local mode, or a server) and PostgreSQL (a table, with pgvector
or without), a page at a time, as chunker-output rows for ``core.drift.build_snapshot``.

A store is named ``KIND:LOCATION#COLLECTION``:

    lancedb:/data/lance#chunks        a LanceDB database folder and its table
    chroma:/data/chroma#docs          a Chroma persistent folder and its collection
    qdrant:/data/qdrant#docs          Qdrant's local mode (a folder)
    qdrant:http://127.0.0.1:6333#docs a Qdrant server (key from QDRANT_API_KEY)
    postgresql://app@db:5432/rag#chunks   a PostgreSQL table (password from PGPASSWORD, or
                                      any of libpq's variables; never in the URL)

Which of the store's fields make a chunk is a ``FieldMap`` (``--field name=field``): its id
(kept as the chunk's ``store_id``, beside goldkeeper's content id), the text, the document,
the document's revision, the ordinal and the offset of the text in its document
(``start_index``). A field may be nested (``metadata.source``): Chroma's metadata and
Qdrant's payload are where those stores keep them. With no ordinal field, each document's
chunks are numbered in the order of their offsets. Credentials come from the environment
only and never reach a log, an error or a snapshot: an error names the store by its kind,
location without credentials, and collection.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from goldkeeper.errors import InputError, UsageError, describe_value

__all__ = ["KINDS", "FieldMap", "Store", "parse_store", "store_chunks", "store_rows"]

KINDS = ("lancedb", "chroma", "qdrant", "postgresql")
#: Chunks read from the store at a time.
PAGE = 1000


@dataclass(frozen=True)
class FieldMap:
    """The store's field (a dotted path into nested values) for each part of a chunk; None
    for a part the store does not keep (then ``revision`` is the text's hash, as for chunker
    output without one, and ``ordinal`` follows the offsets)."""

    id: str = "id"
    text: str = "text"
    doc: str = "doc_uri"
    revision: str | None = "doc_revision"
    ordinal: str | None = "ordinal"
    offset: str | None = "start_index"

    def with_given(self, given: list[str]) -> FieldMap:
        """This map with ``name=field`` assignments (``name=`` for none) applied."""
        names = {f.name for f in fields(self)}
        changes: dict[str, str | None] = {}
        for item in given:
            name, equals, field = item.partition("=")
            if not equals or name not in names:
                raise UsageError(f"--field {item}: give NAME=FIELD, NAME one of {', '.join(sorted(names))}")
            if not field and name in ("id", "text", "doc"):
                raise UsageError(f"--field {item}: a chunk always has its {name}")
            changes[name] = field or None
        return replace(self, **changes)


@dataclass(frozen=True)
class Store:
    kind: str
    location: str
    collection: str

    def __str__(self) -> str:
        """The store as an error names it: no user, password or query string."""
        location = self.location
        if "://" in location:
            parts = urllib.parse.urlsplit(location)
            location = f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"
        return f"{location}#{self.collection}" if self.kind == "postgresql" else f"{self.kind}:{location}#{self.collection}"


def parse_store(url: str) -> Store:
    """A store's name (see the module docstring), checked."""
    kind, colon, rest = url.partition(":")
    if not colon or kind not in KINDS:
        raise UsageError(f"--store: KIND:LOCATION#COLLECTION, KIND one of {', '.join(KINDS)}; got {kind or url!r}")
    location, hash_, collection = rest.rpartition("#") if "#" in rest else (rest, "", "")
    if kind == "postgresql":
        location = f"postgresql:{location}"
        parts = urllib.parse.urlsplit(location)
        if parts.password is not None:
            raise UsageError("--store: a password does not go in the URL (it would reach logs and process lists); "
                             "set PGPASSWORD, or use ~/.pgpass")
    if not hash_ or not collection:
        raise UsageError(f"--store {kind}:...: name the {'table' if kind in ('lancedb', 'postgresql') else 'collection'}"
                         " after a #")
    if not location.strip():
        raise UsageError(f"--store {kind}: give the store's location before the #")
    return Store(kind, location, collection)


def _get(record: Mapping[str, Any], path: str | None) -> Any:
    if path is None:
        return None
    value: Any = record
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _row(record: Mapping[str, Any], store_id: Any, fields_: FieldMap, where: str, position: int) -> dict[str, Any]:
    """A chunker-output row from a store's record, or the refusal naming its id and field."""
    if store_id is None or store_id == "":
        raise InputError(where, "a chunk without an id", field=f"chunk {position}: field {fields_.id}", found="nothing")
    row: dict[str, Any] = {"store_id": str(store_id)}
    for name, target in (("text", "text"), ("doc", "doc_uri"), ("revision", "doc_revision"), ("ordinal", "ordinal"),
                         ("offset", "start_index")):
        path = getattr(fields_, name)
        value = _get(record, path)
        if value is None:
            if name in ("text", "doc"):
                raise InputError(where, f"chunk {store_id} has no {name}", field=f"chunk {position}: field {path}",
                                 found="nothing")
            continue
        if target in ("ordinal", "start_index") and isinstance(value, float) and value.is_integer():
            value = int(value)  # a store that keeps numbers as floats (Chroma's metadata of old)
        row[target] = value
    return row


def _records(store: Store, fields_: FieldMap) -> Iterator[tuple[Any, Mapping[str, Any]]]:
    """(store id, record) for every chunk of the store, a page at a time."""
    reader = {"lancedb": _lancedb, "chroma": _chroma, "qdrant": _qdrant, "postgresql": _postgresql}[store.kind]
    if store.kind != "postgresql" and "://" not in store.location and not os.path.isdir(store.location):
        # (the embedded clients would create an empty store there: a typo must not)
        raise UsageError(f"{store}: no such folder (the store's location)")
    try:
        yield from reader(store, fields_)
    except (UsageError, InputError):
        raise
    except ImportError as error:
        raise UsageError(f"--store {store.kind}: needs {error.name or 'its client'}: "
                         f"pip install 'goldkeeper[{store.kind}]'") from None
    except Exception as error:  # the client's own error: its type and first line, never its URL
        said = str(error).splitlines()[0][:160] if str(error) else ""
        raise UsageError(f"{store}: the store could not be read ({type(error).__name__}"
                         + (f": {_scrub(said)}" if said else "") + ")") from None


def _scrub(text: str) -> str:
    """``text`` without anything that looks like a password in a URL."""
    import re

    return re.sub(r"://[^/@\s]*@", "://", text)


def _lancedb(store: Store, fields_: FieldMap) -> Iterator[tuple[Any, Mapping[str, Any]]]:
    import lancedb

    table = lancedb.connect(store.location).open_table(store.collection)
    tops = sorted({path.split(".")[0] for path in _paths(fields_)} & set(table.schema.names))
    for batch in table.search().select(tops).limit(None).to_batches(batch_size=PAGE):
        for record in batch.to_pylist():
            yield _get(record, fields_.id), record


def _chroma(store: Store, fields_: FieldMap) -> Iterator[tuple[Any, Mapping[str, Any]]]:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=store.location, settings=Settings(anonymized_telemetry=False))
    collection = client.get_collection(store.collection)
    offset = 0
    while True:
        page = collection.get(include=["documents", "metadatas"], limit=PAGE, offset=offset)
        if not page["ids"]:
            return
        for store_id, text, metadata in zip(page["ids"], page["documents"], page["metadatas"]):
            yield store_id, {"id": store_id, "document": text, "text": text, "metadata": metadata or {},
                             **(metadata or {})}
        offset += len(page["ids"])


def _qdrant(store: Store, fields_: FieldMap) -> Iterator[tuple[Any, Mapping[str, Any]]]:
    from qdrant_client import QdrantClient

    if store.location.startswith(("http://", "https://")):
        client = QdrantClient(url=store.location, api_key=os.environ.get("QDRANT_API_KEY") or None)
    else:
        client = QdrantClient(path=store.location)
    try:
        after = None
        while True:
            points, after = client.scroll(store.collection, limit=PAGE, offset=after, with_payload=True,
                                          with_vectors=False)
            for point in points:
                payload = dict(point.payload or {})
                yield point.id, {"id": point.id, "payload": payload, **payload}
            if after is None:
                return
    finally:
        client.close()


def _postgresql(store: Store, fields_: FieldMap) -> Iterator[tuple[Any, Mapping[str, Any]]]:
    import psycopg
    from psycopg import sql

    columns = sorted({path.split(".")[0] for path in _paths(fields_)})
    schema, dot, table = store.collection.rpartition(".")
    name = sql.Identifier(schema, table) if dot else sql.Identifier(table)
    with psycopg.connect(store.location) as connection:
        with connection.cursor() as probe:
            probe.execute(sql.SQL("SELECT * FROM {} LIMIT 0").format(name))
            present = {column.name for column in probe.description or []}
        chosen = [column for column in columns if column in present]
        if fields_.id not in present:
            raise UsageError(f"{store}: the table has no column {fields_.id} (the chunks' id; --field id=COLUMN)")
        with connection.cursor(name="goldkeeper_snapshot") as cursor:  # server-side: a page at a time
            cursor.itersize = PAGE
            cursor.execute(sql.SQL("SELECT {} FROM {} ORDER BY {}").format(
                sql.SQL(", ").join(map(sql.Identifier, chosen)), name, sql.Identifier(fields_.id)))
            for values in cursor:
                record = dict(zip(chosen, values))
                yield record[fields_.id], record


def _paths(fields_: FieldMap) -> list[str]:
    return [path for path in (getattr(fields_, f.name) for f in fields(fields_)) if path]


def store_rows(url: str, fields_: FieldMap | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every chunk of the store at ``url`` as ``(position, chunker-output row)`` (with its
    ``store_id``), in the store's order; with no ordinal field, numbered per document in the
    order of the offsets (then read twice)."""
    store = parse_store(url)
    fields_ = fields_ or FieldMap()
    where = str(store)
    if fields_.ordinal is not None:
        for position, (store_id, record) in enumerate(_records(store, fields_), start=1):
            yield position, _row(record, store_id, fields_, where, position)
        return
    if fields_.offset is None:
        raise UsageError("--field ordinal=: chunks without an ordinal are numbered by their offsets; give --field "
                         "offset=FIELD")
    order: dict[str, list[tuple[int, str]]] = {}
    for position, (store_id, record) in enumerate(_records(store, fields_), start=1):
        row = _row(record, store_id, fields_, where, position)
        offset = row.get("start_index")
        if type(offset) is not int:
            raise InputError(where, f"chunk {store_id} has no offset to number it by",
                             field=f"chunk {position}: field {fields_.offset}", found=describe_value(offset))
        order.setdefault(row["doc_uri"], []).append((offset, row["store_id"]))
    ordinals = {store_id: n for chunks in order.values() for n, (_, store_id) in enumerate(sorted(chunks))}
    for position, (store_id, record) in enumerate(_records(store, fields_), start=1):
        row = _row(record, store_id, fields_, where, position)
        row["ordinal"] = ordinals[row["store_id"]]
        yield position, row


def store_chunks(url: str, fields_: FieldMap | None = None) -> list[tuple[int, dict[str, Any]]]:
    """``store_rows`` in the snapshot's order, which no store's own order is: by document,
    then ordinal (then store id), each with its position in the store's order for errors."""
    return sorted(store_rows(url, fields_), key=lambda item: (item[1].get("doc_uri") if isinstance(
        item[1].get("doc_uri"), str) else "", item[1].get("ordinal") if type(item[1].get("ordinal")) is int else -1,
        item[1]["store_id"]))
