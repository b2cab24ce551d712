"""Snapshots straight from the vector stores that hold the chunks (spec/stores.md), each with its
real client on a real store: LanceDB and Chroma embedded, Qdrant's local mode, PostgreSQL with
pgvector (a server from pgserver's wheel, started here, read as a role with a password). The collection is Python's own help texts
(pydoc_data, 79 documents) cut by LangChain's RecursiveCharacterTextSplitter, thousands of
chunks, then edited and re-chunked at another size. Each snapshot from a store equals, byte
for byte, the one made from the same chunks as JSONL, and drift between the stores' two
versions equals drift between the JSONL snapshots."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import run_cli

CHUNKER = "recursive/400/80"


def _chunks(size: int, overlap: int, edited: bool) -> list[dict]:
    """pydoc's topics as chunker output with offsets and the store's own ids; ``edited``:
    every fifth topic's text changed and revised."""
    from pydoc_data.topics import topics

    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap, add_start_index=True)
    rows = []
    for n, (name, text) in enumerate(sorted(topics.items())):
        revision = "3.11"
        if edited and n % 5 == 0:
            text, revision = text.replace("the", "a") + "\n\nAdded in a later revision.", "3.12"
        for ordinal, document in enumerate(splitter.create_documents([text])):
            rows.append({"doc_uri": f"pydoc://{name}", "doc_revision": revision, "ordinal": ordinal,
                         "text": document.page_content, "start_index": document.metadata["start_index"],
                         "store_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{name}/{revision}/{size}/{ordinal}"))})
    return rows


@pytest.fixture(scope="module")
def versions():
    return {"v1": _chunks(400, 80, False), "v2": _chunks(600, 0, True)}


def _vector(n: int) -> list[float]:
    return [((n * 7919 + i * 104729) % 1000) / 1000.0 for i in range(4)]


def _lancedb(root: Path, name: str, rows: list[dict]) -> str:
    import lancedb

    db = lancedb.connect(str(root / "lance"))
    records = [{"id": r["store_id"], "text": r["text"], "doc_uri": r["doc_uri"], "doc_revision": r["doc_revision"],
                "ordinal": r["ordinal"], "start_index": r["start_index"], "vector": _vector(n)}
               for n, r in enumerate(rows)]
    db.create_table(name, records[::-1], mode="overwrite")  # the store's order is not the snapshot's
    return f"lancedb:{root / 'lance'}#{name}"


def _chroma(root: Path, name: str, rows: list[dict]) -> str:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(root / "chroma"), settings=Settings(anonymized_telemetry=False))
    collection = client.get_or_create_collection(name)
    for start in range(0, len(rows), 2000):
        part = rows[start:start + 2000]
        collection.add(ids=[r["store_id"] for r in part], documents=[r["text"] for r in part],
                       embeddings=[_vector(start + n) for n in range(len(part))],
                       metadatas=[{"source": r["doc_uri"], "revision": r["doc_revision"], "position": r["ordinal"],
                                   "start_index": r["start_index"]} for r in part])
    return f"chroma:{root / 'chroma'}#{name}"


def _qdrant(root: Path, name: str, rows: list[dict]) -> str:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(root / f"qdrant-{name}"))
    client.create_collection(name, vectors_config=models.VectorParams(size=4, distance=models.Distance.COSINE))
    for start in range(0, len(rows), 1000):
        client.upsert(name, [models.PointStruct(id=r["store_id"], vector=_vector(start + n), payload={
            "page_content": r["text"], "metadata": {"doc_uri": r["doc_uri"], "doc_revision": r["doc_revision"],
                                                    "start_index": r["start_index"]}})
            for n, r in enumerate(rows[start:start + 1000])])
    client.close()
    return f"qdrant:{root / f'qdrant-{name}'}#{name}"


FIELDS = {
    "lancedb": [],
    "chroma": ["--field", "doc=source", "--field", "revision=revision", "--field", "ordinal=position"],
    # LangChain's Qdrant layout: text in page_content, the rest under metadata; no ordinal kept
    "qdrant": ["--field", "text=page_content", "--field", "doc=metadata.doc_uri", "--field",
               "revision=metadata.doc_revision", "--field", "offset=metadata.start_index", "--field", "ordinal="],
    # LangChain's PGVector layout
    "postgresql": ["--field", "text=document", "--field", "doc=cmetadata.doc_uri", "--field",
                   "revision=cmetadata.doc_revision", "--field", "ordinal=cmetadata.ordinal", "--field",
                   "offset=cmetadata.start_index"],
}


def _postgres_bin(root: Path) -> tuple[Path, list[str]]:
    """PostgreSQL 16's server with pgvector, from pgserver's wheel (Debian 12 packages no
    pgvector), copied where the user that runs it can read it, and the command prefix that
    runs as that user: the server refuses root, so as root a system user of its own."""
    import importlib.util

    found = importlib.util.find_spec("pgserver")  # not imported: importing it takes a lock of its own
    if found is None or found.origin is None:
        pytest.fail("pgserver is not installed (it is in the test extra: pip install -e '.[test]')")
    package = Path(found.origin).parent
    install = root / "pgserver" / "pginstall"  # its binaries find their libraries at ../../../pgserver.libs
    shutil.copytree(package / "pginstall", install, symlinks=True)
    shutil.copytree(package.parent / "pgserver.libs", root / "pgserver.libs", symlinks=True)
    if os.geteuid() != 0:
        return install / "bin", []
    import pwd

    try:
        pwd.getpwnam(PG_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", PG_USER], check=True, capture_output=True)
    for path in (root, *root.rglob("*")):
        shutil.chown(path, PG_USER)
    return install / "bin", ["runuser", "-u", PG_USER, "--"]


PG_USER = "goldkeeper-pg"
#: The role the snapshot reads as; its password reaches goldkeeper through PGPASSWORD only.
PG_READER, PG_PASSWORD = "rag_reader", "s3cret-Pw-9f2"


@pytest.fixture(scope="module")
def postgres():
    """A real PostgreSQL server with pgvector on loopback, password authentication for TCP, and
    a read-only role that has a password; yields the URL of that role, without its password."""
    root = Path(tempfile.mkdtemp(prefix="goldkeeper-pg-"))  # pytest's folders are root's alone (0700)
    bin_dir, as_user = _postgres_bin(root)
    data, sockets = root / "data", root / "run"
    sockets.mkdir()
    if as_user:
        shutil.chown(sockets, PG_USER)
    subprocess.run([*as_user, str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "--auth-host=scram-sha-256",
                    "-U", "postgres"], check=True, capture_output=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-l", str(root / "log"), "-o",
                    f"-k {sockets} -p {port} -c listen_addresses=127.0.0.1", "start"], check=True, capture_output=True)
    admin = [*as_user, str(bin_dir / "psql"), "-h", str(sockets), "-p", str(port), "-U", "postgres", "-d", "postgres",
             "-v", "ON_ERROR_STOP=1", "-c"]
    try:
        for statement in ("CREATE EXTENSION vector",
                          f"CREATE ROLE {PG_READER} LOGIN PASSWORD '{PG_PASSWORD}'",
                          f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO {PG_READER}"):
            subprocess.run([*admin, statement], check=True, capture_output=True)
        yield {"admin": f"postgresql://postgres@/postgres?host={sockets}&port={port}",
               "reader": f"postgresql://{PG_READER}@127.0.0.1:{port}/postgres"}
    finally:
        subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"],
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def _postgresql(server: dict[str, str], name: str, rows: list[dict]) -> str:
    """LangChain's PGVector layout: the text in ``document``, the rest in the ``cmetadata``
    jsonb, the embedding a pgvector ``vector`` with an HNSW index."""
    import psycopg
    from psycopg.types.json import Jsonb

    with psycopg.connect(server["admin"]) as connection:
        connection.execute(f"DROP TABLE IF EXISTS {name}")
        connection.execute(f"CREATE TABLE {name} (id varchar PRIMARY KEY, document varchar NOT NULL, "
                           "cmetadata jsonb, embedding vector(4))")
        connection.execute(f"CREATE INDEX ON {name} USING hnsw (embedding vector_cosine_ops)")
        with connection.cursor().copy(f"COPY {name} (id, document, cmetadata, embedding) FROM STDIN") as copy:
            for n, r in enumerate(rows):
                metadata = {"doc_uri": r["doc_uri"], "doc_revision": r["doc_revision"], "ordinal": r["ordinal"],
                            "start_index": r["start_index"]}
                copy.write_row((r["store_id"], r["text"], Jsonb(metadata), str(_vector(n))))
        assert connection.execute(f"SELECT count(*) FROM {name} WHERE embedding IS NOT NULL").fetchone()[0] == len(rows)
    return f"{server['reader']}#{name}"


@pytest.mark.parametrize("kind", ["lancedb", "chroma", "qdrant", "postgresql"])
def test_a_snapshot_from_the_store_equals_the_one_from_jsonl_and_so_does_drift(kind, versions, tmp_path, request):
    pytest.importorskip({"lancedb": "lancedb", "chroma": "chromadb", "qdrant": "qdrant_client",
                         "postgresql": "psycopg"}[kind])
    env = {"PGPASSWORD": PG_PASSWORD} if kind == "postgresql" else {}
    write = {"lancedb": _lancedb, "chroma": _chroma, "qdrant": _qdrant}.get(kind)
    snapshots = {}
    for version, rows in versions.items():
        assert len(rows) > 1000 and len({r["doc_uri"] for r in rows}) == 79
        if kind == "postgresql":
            store = _postgresql(request.getfixturevalue("postgres"), f"chunks_{version}", rows)
        else:
            store = write(tmp_path, f"chunks_{version}", rows)
        chunks = tmp_path / f"{version}.jsonl"
        chunks.write_text("".join(json.dumps(r) + "\n" for r in sorted(rows, key=lambda r: (r["doc_uri"], r["ordinal"]))))
        from_jsonl, from_store = tmp_path / f"{version}-jsonl.json", tmp_path / f"{version}-{kind}.json"
        made = run_cli("snapshot", str(chunks), "--chunker", CHUNKER, "-o", str(from_jsonl), "--quiet")
        assert made.code == 0, made.stderr
        started = time.monotonic()
        read = run_cli("snapshot", "--store", store, *FIELDS[kind], "--chunker", CHUNKER, "-o", str(from_store),
                       env=env)
        assert read.code == 0, read.stderr
        assert not env or PG_PASSWORD not in read.stdout + read.stderr + from_store.read_text()
        assert from_store.read_bytes() == from_jsonl.read_bytes(), f"{kind} {version} ({time.monotonic() - started:.1f} s)"
        snapshot = json.loads(from_store.read_text())
        assert {c["store_id"] for c in snapshot["chunks"]} == {r["store_id"] for r in rows}
        snapshots[version] = (from_jsonl, from_store)
    labels = tmp_path / "labels.jsonl"  # a label on every tenth chunk of the first version
    first = json.loads(snapshots["v1"][0].read_text())["chunks"]
    labels.write_text("".join(json.dumps({"query_id": f"q{n}", "doc_uri": c["doc_uri"], "chunk_id": c["chunk_id"],
                                          "chunk_text": c["text"], "text_sha": c["text_sha"], "relevance": 1}) + "\n"
                              for n, c in enumerate(first[::10])))
    drifts = [json.loads(run_cli("drift", "-j", str(labels), "-c", str(snapshot), "--format", "json").stdout)
              for snapshot in snapshots["v2"]]
    assert drifts[0]["findings"] == drifts[1]["findings"] and drifts[0]["summary"] == drifts[1]["summary"]
    assert drifts[0]["summary"]["valid"] < len(first[::10])  # the re-chunk moved labels


def test_a_store_name_is_checked_and_a_password_never_goes_in_it(tmp_path):
    for store, said in (("pinecone:x#y", "KIND one of lancedb, chroma, qdrant, postgresql"),
                        (f"lancedb:{tmp_path}", "name the table after a #"),
                        ("postgresql://app:secret@db/rag#chunks", "a password does not go in the URL")):
        done = run_cli("snapshot", "--store", store, "--chunker", CHUNKER, "-o", str(tmp_path / "s.json"))
        assert done.code == 2 and said in done.stderr, done
        assert "secret" not in done.stderr
    for args, said in ((("--store-url", "postgresql://app:secret@db/rag#chunks"), "a password does not go in the URL"),
                       (("--store-field", "doc=source", "--chunks-url", "x"), "--store-field: maps the fields"),
                       (("--store-url", "lancedb:/x#t", "--store-field", "colour=red"), "NAME one of"),
                       (("--store-url", "lancedb:/x#t", "--snapshot-url", "s.json"), "give one of")):
        done = run_cli("emit-reindex", "kb", *args)
        assert done.code == 2 and said in done.stderr and "secret" not in done.stderr, (args, done)
    for kind in ("lancedb", "chroma", "qdrant"):  # a typo creates no empty store
        missing = run_cli("snapshot", "--store", f"{kind}:{tmp_path / 'none'}#chunks", "--chunker", CHUNKER,
                          "-o", str(tmp_path / "s.json"))
        assert missing.code == 2 and "no such folder" in missing.stderr, missing
        assert not (tmp_path / "none").exists()
    (tmp_path / "empty").mkdir()
    absent = run_cli("snapshot", "--store", f"chroma:{tmp_path / 'empty'}#chunks", "--chunker", CHUNKER,
                     "-o", str(tmp_path / "s.json"))
    assert absent.code == 2 and "the store could not be read" in absent.stderr and "Traceback" not in absent.stderr
    assert not (tmp_path / "s.json").exists()


def test_postgresql_credentials_come_from_the_environment_and_are_never_said(postgres, versions, tmp_path):
    """The reader role's password given through PGPASSWORD reads the table; a wrong one, or
    none, is one line naming the store without credentials, exit 2, no snapshot, and the
    password given is in no output."""
    store = _postgresql(postgres, "chunks_auth", versions["v1"][:50])
    out = tmp_path / "s.json"
    args = ("snapshot", "--store", store, *FIELDS["postgresql"], "--chunker", CHUNKER, "-o", str(out))
    assert run_cli(*args, env={"PGPASSWORD": PG_PASSWORD}).code == 0 and out.exists()
    out.unlink()
    wrong = "not-the-Pw-77"
    for env in ({"PGPASSWORD": wrong}, {"PGPASSWORD": ""}):
        done = run_cli(*args, env=env)
        assert done.code == 2, done
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("error: postgresql://127.0.0.1:") and "/postgres#chunks_auth: " in line, line
        assert wrong not in done.stderr + done.stdout and PG_PASSWORD not in done.stderr + done.stdout
        assert not out.exists()
