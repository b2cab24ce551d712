"""The storage layout flows publish to, on any fsspec root (spec/storage.md).

    <root>/reports/<suite>/<time>-<sha12>.json      the full report, written once
    <root>/history/<suite>/<time>-<sha12>.json      one entry per evaluation
    <root>/queue/<suite>/<time>.jsonl               labels that need a person
    <root>/snapshots/<corpus>/<chunker>-<sha12>/    a sharded corpus snapshot (manifest.json)
    <root>/suites/<suite>.json                      the suite's configuration (spec/suites.md)
    <root>/answers/<suite>/<time>-<sha12>.jsonl     people's answers to the queue, as given
    <root>/reindex/<suite>/<corpus sha16>.json      a re-index's record: when it began, what it read

The default root is ``$GOLDKEEPER_STORAGE``, else ``file://<cwd>/.goldkeeper``. Every write is atomic (``write_bytes_atomic``);
credentials come from the environment or the provider's chain, never from here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable
from typing import Any

from goldkeeper.errors import ChangedError, InputError, MissingError, StorageError, UsageError, describe_value
from goldkeeper.io.files import (
    create_once,
    exists,
    filesystem,
    is_local,
    local_path,
    locked,
    read_bytes,
    storage_failures,
    stored_bytes,
    unreachable,
    write_bytes_atomic,
)

__all__ = [
    "LINK_LIFETIME_SECONDS",
    "browser_link",
    "check_reindex_inputs",
    "content_sha256",
    "current_judgments_url",
    "default_root",
    "evaluation_key",
    "find_evaluation",
    "history_entry",
    "newest_answers_time",
    "publish_answers",
    "publish_page",
    "publish_queue",
    "publish_report",
    "publish_sharded_snapshot",
    "read_current_judgments",
    "read_history",
    "read_judge_step",
    "read_judgments_version",
    "read_latest_queue",
    "read_queue",
    "read_suite",
    "reindex_record",
    "suite_exists",
    "suite_slug",
    "suite_url",
    "system_name",
    "version_url",
    "work_url",
    "write_judge_step",
    "write_judgments_version",
    "write_suite",
]

_SLUG = re.compile(r"[^a-z0-9]+")


def default_root() -> str:
    """``GOLDKEEPER_STORAGE`` when set (how a worker's deployments find their storage without
    a parameter), else .goldkeeper in the working directory."""
    return os.environ.get("GOLDKEEPER_STORAGE") or "file://" + os.path.join(os.getcwd(), ".goldkeeper")


def work_url(storage_url: str, suite: str, *keys: str) -> str:
    """A partitioned run's work folder: named by what the run works on (``keys``), so a run
    killed part-way and run again (a retry, or a new run for the same event) works in the
    same folder and removes it at its end, leaving nothing behind."""
    name = hashlib.sha256("\0".join(keys).encode("utf-8")).hexdigest()[:16]
    return f"{storage_url.rstrip('/')}/work/{suite_slug(suite)}/{name}"


def suite_slug(suite: str) -> str:
    """A suite name as lowercase letters, digits and dashes (also Prefect's artifact-key rule):
    the name itself when it is one already, else its letters and digits joined by dashes and
    six hex digits of the name's sha256, so that names differing only in case or punctuation
    ('A/B', 'a-b', 'A B') never share a folder, a cache or each other's reports."""
    slug = _SLUG.sub("-", suite.lower()).strip("-")
    if not slug:
        raise UsageError(f"suite '{suite}': needs at least one letter or digit")
    if slug == suite:
        return slug
    return f"{slug}-{hashlib.sha256(suite.encode('utf-8')).hexdigest()[:6]}"


def _join(root: str, *parts: str) -> str:
    return root.rstrip("/") + "/" + "/".join(parts)


def _stamp(generated_at: str) -> str:
    return re.sub(r"[^0-9TZ]", "", generated_at)


def _ensure_parent(url: str) -> None:
    if is_local(url):
        try:
            os.makedirs(os.path.dirname(local_path(url)), exist_ok=True)
        except OSError as error:
            raise StorageError(url, f"cannot be written: its directory cannot be made ({error.strerror or error})") from None


def _write(url: str, data: bytes) -> None:
    _ensure_parent(url)
    write_bytes_atomic(url, data)


def _list(directory: str) -> list[str]:
    """The names in a storage directory, sorted (none when it does not exist)."""
    fs, path = filesystem(directory)
    try:
        return sorted(p.rsplit("/", 1)[-1] for p in fs.ls(path, detail=False, refresh=True))
    except (FileNotFoundError, OSError):
        return []


def read_history(root: str, suite: str) -> list[dict[str, Any]]:
    """Every evaluation of the suite, of every system, oldest first: one object per evaluation
    under history/<suite>/, and the lines of a history/<suite>.jsonl written before that
    layout. A suite configured with several runs was published before 0.2 as one suite per
    run (``<suite>-<file stem>``): those histories are read too, each entry as the system
    its run is (``system_name``), so nothing recorded before is lost from the trend."""
    entries = _history_of(root, suite_slug(suite))
    config = read_suite(root, suite, required=False)
    if config is not None and len(config.runs) > 1:
        seen = {entry.get("report") for entry in entries}
        for run in config.runs:
            system = system_name(run)
            entries += [{**entry, "system": system} for entry in _history_of(root, suite_slug(f"{suite}-{system}"))
                        if entry.get("report") not in seen]
    return sorted(entries, key=lambda entry: (entry["time"], entry.get("system") or ""))


def _history_of(root: str, slug: str) -> list[dict[str, Any]]:
    try:
        legacy = read_bytes(_join(root, "history", f"{slug}.jsonl")).decode("utf-8").splitlines()
    except StorageError:
        legacy = []
    entries = [json.loads(line) for line in legacy if line.strip()]
    directory = _join(root, "history", slug)
    for name in _list(directory):
        if name.endswith(".json"):
            entries.append(json.loads(read_bytes(_join(directory, name))))
    return entries


def system_name(run_url: str) -> str:
    """A system of a suite with several runs, named by its run file's stem
    (``.../run-a.jsonl``: ``run-a``)."""
    return run_url.rstrip("/").rsplit("/", 1)[-1].split(".")[0]


#: How long a presigned link in an artifact stays valid: a week, the span of a nightly
#: trend a person looks back over.
LINK_LIFETIME_SECONDS = 7 * 24 * 3600


def browser_link(url: str, lifetime: int = LINK_LIFETIME_SECONDS) -> str | None:
    """A link a browser can open to a stored file, or None where there is none to give: an
    http(s) URL as it is, an object store's a presigned URL valid ``lifetime`` seconds (the
    credentials are the flow's; the link carries a signature, never the secret key), a local file none
    (a browser on another machine cannot open it; the CLI prints its path)."""
    if url.startswith(("http://", "https://")):
        return url
    if is_local(url) or url.startswith("memory://"):
        return None
    fs, path = filesystem(url)
    try:
        return fs.sign(path, expiration=lifetime)
    except (NotImplementedError, AttributeError, OSError, ValueError):
        return None


def publish_page(root: str, suite: str, name: str, data: bytes) -> str:
    """Write a rendered page or chart of a suite (pages/<suite>/<name>), replacing the last;
    its URL."""
    url = _join(root, "pages", suite_slug(suite), name)
    _write(url, data)
    return url


def content_sha256(url: str) -> str:
    """sha256 of a file's bytes, streamed; for a sharded snapshot (a directory or its
    manifest.json), of the manifest, which holds every shard's sha256."""
    from goldkeeper.io.files import iter_blocks
    from goldkeeper.io.snapshots import MANIFEST, _is_dir

    if url != "-" and _is_dir(url):
        url = _join(url, MANIFEST)
    digest = hashlib.sha256()
    for block in iter_blocks(url):
        digest.update(block)
    return digest.hexdigest()


def evaluation_key(**parts: Any) -> str:
    """The cache key of an evaluation: the sha256 of its inputs' content hashes and settings."""
    from goldkeeper._version import __version__

    blob = json.dumps({**parts, "goldkeeper": __version__}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def find_evaluation(root: str, suite: str, key: str, system: str | None = None) -> dict[str, Any] | None:
    """The history line of the system's evaluation already published under ``key``, if any."""
    for line in reversed(read_history(root, suite)):
        if line.get("key") == key and line.get("system") == system:
            return line
    return None


def publish_report(root: str, suite: str, report: dict[str, Any], key: str | None = None,
                   system: str | None = None) -> str:
    """Write the report under reports/ and append its summary line to history/ (with the
    evaluation's cache ``key``, and the ``system`` it scored when the suite has several); its
    URL."""
    slug = suite_slug(suite)
    body = (json.dumps(report, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    digest = hashlib.sha256(body).hexdigest()
    url = _join(root, "reports", slug, f"{_stamp(report['generated_at'])}-{digest[:12]}.json")
    _write(url, body)
    line = history_entry(report, url)
    if key is not None:
        line["key"] = key
    if system is not None:
        line["system"] = system
    # One object per evaluation, named by its content: concurrent publishes on one suite each
    # write their own object, so none can overwrite another's (object stores cannot append,
    # and a rewrite of one shared file loses the lines of a writer that raced it).
    entry = (json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    name = f"{_stamp(report['generated_at'])}-{hashlib.sha256(entry).hexdigest()[:12]}.json"
    _write(_join(root, "history", slug, name), entry)
    return url


def history_entry(report: dict[str, Any], report_url: str) -> dict[str, Any]:
    """What the history keeps of a report: enough to draw a trend and tell which points
    compare (cutoffs, threshold, metric definitions, judgments and corpus versions)."""
    inputs = report.get("inputs", {})
    return {
        "time": report["generated_at"],
        "corpus_fingerprint": (report.get("corpus") or {}).get("fingerprint"),
        "judgments_sha256": inputs.get("judgments", {}).get("sha256"),
        "judgments_url": inputs.get("judgments", {}).get("url"),
        "run_sha256": inputs.get("run", {}).get("sha256"),
        "run_url": inputs.get("run", {}).get("url"),
        "k": report.get("k"),
        "threshold": report.get("threshold"),
        "tool_version": (report.get("tool") or {}).get("version"),
        "metrics": {name: {k: v for k, v in m.items() if k in ("value", "ci")} for name, m in report["metrics"].items()},
        "gates": [{k: v for k, v in g.items() if k in ("expression", "status", "observed", "baseline")}
                  for g in report["verdict"].get("gates") or []],
        "verdict": report["verdict"]["status"],
        "reasons": report["verdict"].get("reasons", []),
        "report": report_url,
        **({"kappa": report["audit"]["kappa"], "audited_queries": report["audit"]["queries"]}
           if report.get("audit") else {}),
    }


def publish_queue(root: str, suite: str, items: list[dict[str, Any]], generated_at: str, *,
                  keep_empty: bool = False) -> str | None:
    """Write the re-judgment queue, when it has items (or, with ``keep_empty``, also when it
    has none: what is left once people answered everything); its URL. When the newest queue
    already holds exactly these items (a repeated event), that one's URL is returned and
    nothing is written."""
    if not items and not keep_empty:
        return None
    body = "".join(json.dumps(i, ensure_ascii=False, separators=(",", ":")) + "\n" for i in items).encode("utf-8")
    try:
        latest, _ = read_latest_queue(root, suite)
        if read_bytes(latest) == body:
            return latest
    except StorageError:
        pass
    url = _join(root, "queue", suite_slug(suite), f"{_stamp(generated_at)}.jsonl")
    _write(url, body)
    return url


def read_queue(url: str) -> list[dict[str, Any]]:
    """A re-judgment queue's items, each checked as a ``QueueItem`` (a line that is not one
    is refused with its line and field, before any of it is used)."""
    from pydantic_core import from_json

    from goldkeeper.models.corpus import QueueItem

    items = []
    for number, line in enumerate(read_bytes(url).decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = from_json(line, allow_inf_nan=False)
            QueueItem.model_validate(item)
        except ValueError as error:
            raise _refusal(url, error, "item", line=number) from None
        items.append(item)
    return items


def _refusal(url: str, error: ValueError, what: str, line: int | None = None) -> InputError:
    """A pydantic refusal of a record read from ``url`` (or JSON that is none) as one line:
    the field, what was wrong and what was found."""
    from pydantic import ValidationError

    first = error.errors()[0] if isinstance(error, ValidationError) else None
    field = ".".join(str(p) for p in first["loc"]) if first and first["loc"] else what
    return InputError(url, (first["msg"] if first else f"not valid JSON ({error})").removeprefix("Value error, "),
                      line=line, field=field, found=describe_value(first.get("input")) if first else "the file")


def read_latest_queue(root: str, suite: str) -> tuple[str, list[dict[str, Any]]]:
    """The suite's newest re-judgment queue (queue/<suite>/<time>.jsonl) and its items."""
    directory = _join(root, "queue", suite_slug(suite))
    names = [name for name in _list(directory) if name.endswith(".jsonl")]
    if not names:
        raise StorageError(directory, "holds no re-judgment queue", hint="run on_reindex or drift --queue first")
    url = _join(directory, names[-1])
    return url, read_queue(url)


def publish_audit(root: str, suite: str, record: dict[str, Any]) -> tuple[str, bool]:
    """An audit of the judge the lifecycle opened (``models.corpus.AuditRecord``), under its
    opening time; the same audit again (a repeated event, a rerun) is stored once. Its URL,
    and whether it was stored now."""
    from goldkeeper.models.corpus import AuditRecord

    AuditRecord.model_validate(record)
    body = json.dumps(record, ensure_ascii=False, sort_keys=True, indent=1).encode("utf-8") + b"\n"
    found = read_latest_audit(root, suite)
    if found is not None and read_bytes(found[0]) == body:
        return found[0], False
    url = _join(root, "audit", suite_slug(suite), f"{_stamp(record['opened_at'])}.json")
    _write(url, body)
    return url, True


def read_audit(url: str) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """An audit record, checked, and people's labels on it (None: not answered yet)."""
    from pydantic_core import from_json

    from goldkeeper.io.loading import load_label_rows
    from goldkeeper.models.corpus import AuditRecord

    try:
        record = from_json(read_bytes(url), allow_inf_nan=False)
        AuditRecord.model_validate(record)
    except ValueError as error:
        raise _refusal(url, error, "audit") from None
    try:
        people, _ = load_label_rows(audit_people_url(url))
    except MissingError:
        people = None
    return record, people


def audit_sha256s(url: str) -> dict[str, str | None]:
    """An audit's content, by hash: its record and people's labels (None: not answered)."""
    try:
        people = content_sha256(audit_people_url(url))
    except MissingError:
        people = None
    return {"audit": content_sha256(url), "audit_people": people}


def audit_people_url(url: str) -> str:
    return url.removesuffix(".json") + ".people.jsonl"


def read_latest_audit(root: str, suite: str) -> tuple[str, dict[str, Any], list[dict[str, Any]] | None] | None:
    """The suite's newest audit of the judge: its URL, record and people's labels; None: none."""
    directory = _join(root, "audit", suite_slug(suite))
    names = [name for name in _list(directory) if name.endswith(".json")]
    if not names:
        return None
    url = _join(directory, names[-1])
    return (url, *read_audit(url))


def publish_audit_people(url: str, data: bytes) -> str:
    """People's labels on an audit (judgments JSONL, labeled_by human:), beside its record."""
    target = audit_people_url(url)
    _write(target, data)
    return target


def suite_url(root: str, suite: str) -> str:
    return _join(root, "suites", f"{suite_slug(suite)}.json")


def read_suite(root: str, suite: str, *, required: bool = True):
    """The suite's configuration (``SuiteConfig``), checked as ``write_suite`` checks it; None
    when there is none and ``required`` is false."""
    from pydantic_core import from_json

    from goldkeeper.models.suite import SuiteConfig

    url = suite_url(root, suite)
    try:
        data = read_bytes(url)
    except MissingError:
        if not required:
            return None
        raise InputError(url, f"holds no configuration for suite '{suite}'",
                         hint=f"goldkeeper suite init {suite} --storage {root} --judgments FILE --run URL") from None
    try:
        config = SuiteConfig.model_validate(from_json(data, allow_inf_nan=False))
    except ValueError as error:
        raise _refusal(url, error, "suite") from None
    _check_gates(url, config.gates)
    return config


def _check_gates(source: str, gates: list[str]) -> None:
    from goldkeeper.core.gates import parse_gate

    for n, gate in enumerate(gates):
        try:
            parse_gate(gate)
        except ValueError as error:
            raise InputError(source, str(error), field=f"gates.{n}", found=describe_value(gate)) from None


def write_suite(root: str, config) -> str:
    """Write a suite's configuration (its gates checked first); its URL."""
    url = suite_url(root, config.suite)
    _check_gates(url, config.gates)
    _write(url, (config.model_dump_json(indent=2) + "\n").encode("utf-8"))
    return url


def publish_answers(root: str, suite: str, rows: list[dict[str, Any]], generated_at: str
                    ) -> tuple[str, list[dict[str, Any]]] | None:
    """People's answers as given (queue-answer.schema.json lines, what ``queue apply`` reads),
    kept beside the judgments version they made: their URL and rows (None: no answers).

    Named by what was answered, not when: answers kept before with the same content (a run
    retried after it was killed finds the answers it was given and grades them again, at a
    later time) are not kept twice; those rows, with the time they were first given, come
    back, so the version they make is the one the first attempt made."""
    if not rows:
        return None
    timeless = [{key: value for key, value in row.items() if key != "labeled_at"} for row in rows]
    same = hashlib.sha256(json.dumps(timeless, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()[:12]
    directory = _join(root, "answers", suite_slug(suite))
    for name in _list(directory):
        if name.endswith(f"-{same}.jsonl"):
            url = _join(directory, name)
            return url, [json.loads(line) for line in read_bytes(url).decode("utf-8").splitlines() if line.strip()]
    body = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows).encode("utf-8")
    url = _join(directory, f"{_stamp(generated_at)}-{same}.jsonl")
    _write(url, body)
    return url, rows


def newest_answers_time(root: str, suite: str) -> str | None:
    """When the suite's newest kept answers were given (their ``labeled_at``), or None."""
    directory = _join(root, "answers", suite_slug(suite))
    names = [name for name in _list(directory) if name.endswith(".jsonl")]
    if not names:
        return None
    first = read_bytes(_join(directory, max(names))).split(b"\n", 1)[0]
    return json.loads(first).get("labeled_at") if first.strip() else None


def current_judgments_url(root: str, suite: str) -> str:
    return _join(root, "judgments", suite_slug(suite), "current.jsonl")


def _generations(root: str, slug: str) -> tuple[Any, str, int]:
    """An object store's generation log for a suite: (filesystem, directory, latest number)."""
    fs, directory = filesystem(_join(root, "judgments", slug, "generations"))
    try:
        names = fs.ls(directory, detail=False, refresh=True)
    except FileNotFoundError:
        names = []
    except storage_failures() as error:  # not "no generations": a store that did not answer
        raise unreachable(_join(root, "judgments", slug, "generations"), "cannot be read", error) from None
    numbers = [int(stem) for stem in (n.rsplit("/", 1)[-1].removesuffix(".json") for n in names) if stem.isdigit()]
    return fs, directory, max(numbers, default=0)


def _head(root: str, slug: str) -> tuple[str | None, int]:
    """The current version's sha256 and generation (object stores: the newest generation
    claimed; before any, or locally, the sha256 of current.jsonl, generation 0)."""
    if not is_local(root):
        fs, directory, latest = _generations(root, slug)
        if latest:
            return json.loads(fs.cat_file(f"{directory}/{latest:012d}.json"))["sha256"], latest
    try:
        return hashlib.sha256(read_bytes(_join(root, "judgments", slug, "current.jsonl"))).hexdigest(), 0
    except MissingError:  # no version yet; a store that does not answer is not that
        return None, 0


def suite_exists(root: str, suite: str) -> bool:
    """Whether the suite has judgments on storage (without reading them)."""
    slug = suite_slug(suite)
    if not is_local(root) and _head(root, slug)[1]:
        return True
    return exists(current_judgments_url(root, suite))


def check_reindex_inputs(root: str, suite: str, corpus_url: str | None, chunks_url: str | None) -> None:
    """What a re-index names, checked before anything is written: a suite with judgments on
    storage, and a snapshot or chunker output that is there. An ``InputError`` (never retried:
    waiting does not make a missing suite or file appear)."""
    if not suite_exists(root, suite):
        raise InputError("re-index", f"names a suite with no judgments at {root}", field="suite",
                         found=describe_value(suite),
                         hint=f"goldkeeper suite init {suite} --storage {root} --judgments FILE")
    for field, url in (("snapshot_url", corpus_url), ("chunks_url", chunks_url)):
        if url and not exists(url):
            raise InputError("re-index", "names nothing that exists", field=field, found=describe_value(url))


def read_current_judgments(root: str, suite: str) -> tuple[bytes, str]:
    """The suite's current judgments and their sha256 (what a later write must still find).
    On object stores the newest claimed generation names the version, so a reader never sees
    a current.jsonl that a crashed writer left behind."""
    slug = suite_slug(suite)
    if not is_local(root):
        sha, generation = _head(root, slug)
        if generation:
            data = read_bytes(_join(root, "judgments", slug, "versions", f"{sha}.jsonl"))
            return data, hashlib.sha256(data).hexdigest()
    data = read_bytes(current_judgments_url(root, suite))
    return data, hashlib.sha256(data).hexdigest()


def _changed(current: str, expected: str | None, found: str | None) -> StorageError:
    return ChangedError(
        current,
        f"changed since it was read (expected version {expected or 'none'}, found {found or 'none'}); "
        "nothing was made current",
        hint="run the flow again on the current version",
    )


def write_judgments_version(root: str, suite: str, data: bytes, expected_sha: str | None) -> tuple[str, str]:
    """Make ``data`` the suite's current judgments, keeping every previous version.

    ``expected_sha`` is the sha256 of the version the caller read (None: there was none). If
    the current version is no longer that one, another flow rewrote the judgments meanwhile
    and ``data`` is not made current: a ``StorageError`` says so, and no data is lost (the
    current version is untouched; a writer that loses the conditional claim below has
    already stored its version under versions/). Locally a file lock serializes writers. On object stores, which have no locks, the writer claims generation n+1 with a
    conditional put (If-None-Match: *, s3fs's ``mode="create"``): of two writers that read
    generation n, exactly one claim succeeds. Returns the new version's URL and sha256.
    """
    slug = suite_slug(suite)
    current = current_judgments_url(root, suite)
    digest = hashlib.sha256(data).hexdigest()
    version = _join(root, "judgments", slug, "versions", f"{digest}.jsonl")
    if is_local(current):  # the lock file lies beside the current version: its folder must exist
        os.makedirs(os.path.dirname(local_path(current)), exist_ok=True)
    # Locally a file lock serializes writers; object stores have none (the claim below)
    with locked([current]):
        found, generation = _head(root, slug)
        if found == digest != expected_sha:
            # Current already: this very change, made by an attempt stopped before it could
            # say so (a killed flow, a retried task), or the same bytes from another writer.
            # Nothing is applied twice; on an object store, current.jsonl (written after the
            # claim) is made to hold it if the attempt died between the two.
            if not is_local(root) and stored_bytes(*filesystem(current)) != data:
                _write(current, data)
            return version, digest
        if found != expected_sha:
            raise _changed(current, expected_sha, found)
        _write(version, data)
        if not is_local(root):
            claim = json.dumps({"sha256": digest, "parent": expected_sha}).encode("utf-8")
            # Generation n+1 taken by another writer: its claim's bytes are another version's
            # (``create_once`` tells a put of this claim answered with an error from that).
            if create_once(_join(root, "judgments", slug, "generations", f"{generation + 1:012d}.json"), claim) != claim:
                raise _changed(current, expected_sha, "a newer one made current meanwhile")
        _write(current, data)
    return version, digest


def version_url(root: str, suite: str, sha: str) -> str:
    """Where the suite's judgments version with this sha256 is kept (versions/<sha>.jsonl)."""
    return _join(root, "judgments", suite_slug(suite), "versions", f"{sha}.jsonl")


def read_judgments_version(root: str, suite: str, sha: str) -> bytes | None:
    """The suite's judgments version with this sha256, as kept; None when it is not kept (a
    current.jsonl put there by hand) or its bytes are not that version's."""
    try:
        data = read_bytes(version_url(root, suite, sha))
    except MissingError:
        return None
    return data if hashlib.sha256(data).hexdigest() == sha else None


def reindex_record(root: str, suite: str, corpus_sha: str, corpus_url: str, started_at: str, judgments_sha: str,
                   *, replace: bool = False) -> dict[str, Any]:
    """The record of the suite's re-index onto the corpus whose content has ``corpus_sha``:
    when it began and which judgments version it read (reindex/<suite>/<corpus sha16>.json).

    The first attempt creates it (``create_once``); every later attempt (a retry after a
    crash, the same event delivered again, at once or later) gets that record back, and so
    stamps what it writes with the first attempt's time and redoes the first attempt's work
    from the version it read: the same bytes, which make nothing twice. ``replace``: a new
    re-index of that corpus (the suite's judgments moved on since the record was made)."""
    from pydantic_core import from_json

    from goldkeeper.models.corpus import ReindexRecord

    record = ReindexRecord(suite=suite, corpus_url=corpus_url, corpus_sha256=corpus_sha, started_at=started_at,
                           judgments_sha256=judgments_sha)
    url = _join(root, "reindex", suite_slug(suite), f"{corpus_sha[:16]}.json")
    body = (record.model_dump_json(indent=1) + "\n").encode("utf-8")
    if replace:
        _write(url, body)
        return record.model_dump()
    try:
        return ReindexRecord.model_validate(from_json(create_once(url, body), allow_inf_nan=False)).model_dump()
    except ValueError as error:
        raise _refusal(url, error, "record") from None


def _judge_step_url(root: str, suite: str, corpus_sha: str) -> str:
    return _join(root, "reindex", suite_slug(suite), f"{corpus_sha[:16]}.judge.json")


def write_judge_step(root: str, suite: str, corpus_sha: str, step: dict[str, Any]) -> str:
    """Keep what the re-index onto ``corpus_sha`` had its judge make (``models.corpus.JudgeStep``),
    before that version is made current; each attempt's replaces the one before."""
    from goldkeeper.models.corpus import JudgeStep

    url = _judge_step_url(root, suite, corpus_sha)
    _write(url, (JudgeStep.model_validate(step).model_dump_json(indent=1) + "\n").encode("utf-8"))
    return url


def read_judge_step(root: str, suite: str, corpus_sha: str) -> dict[str, Any] | None:
    """What the re-index onto ``corpus_sha`` had its judge make; None: its judge made nothing."""
    from pydantic_core import from_json

    from goldkeeper.models.corpus import JudgeStep

    url = _judge_step_url(root, suite, corpus_sha)
    try:
        data = read_bytes(url)
    except MissingError:
        return None
    try:
        return JudgeStep.model_validate(from_json(data, allow_inf_nan=False)).model_dump()
    except ValueError as error:
        raise _refusal(url, error, "judge step") from None


def publish_sharded_snapshot(root: str, corpus: str, chunks_url: str, chunker: str) -> dict[str, Any]:
    """Stream chunker output into a sharded snapshot under
    snapshots/<corpus>/<chunker>-<sha12 of the chunker output>/; its manifest URL, the manifest,
    and whether it was already there.

    The directory is named by the content it was built from, so a repeated re-index event with
    the same chunker output finds the snapshot written (manifest last, so only whole ones count)
    and does no work twice.
    """
    from goldkeeper.core.jsonl import decode_jsonl
    from goldkeeper.io.files import iter_blocks, iter_lines, source_name

    digest = hashlib.sha256()
    for block in iter_blocks(chunks_url):
        digest.update(block)
    source = source_name(chunks_url)
    return _publish_snapshot(root, corpus, chunker, digest.hexdigest(),
                             lambda: decode_jsonl(iter_lines(chunks_url), source), source)


def publish_store_snapshot(root: str, corpus: str, store_url: str, chunker: str, fields: list[str]) -> dict[str, Any]:
    """The chunks of a vector store (``io.stores``; ``fields`` as ``--field`` takes them) as a
    sharded snapshot under snapshots/<corpus>/<chunker>-<sha12 of the chunks read>/, as
    ``publish_sharded_snapshot`` does for chunker output: the same chunks twice, stored once."""
    from goldkeeper.io.stores import FieldMap, parse_store, store_chunks

    rows = store_chunks(store_url, FieldMap().with_given(fields))
    digest = hashlib.sha256()
    for _, row in rows:
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n")
    return _publish_snapshot(root, corpus, chunker, digest.hexdigest(), lambda: rows, str(parse_store(store_url)))


def _publish_snapshot(root: str, corpus: str, chunker: str, digest: str, rows: Callable[[], Iterable[Any]],
                      source: str) -> dict[str, Any]:
    """A sharded snapshot of numbered chunker-output ``rows`` under the folder their ``digest``
    names, or the one already there."""
    from goldkeeper.io.snapshots import MANIFEST, ShardedCorpus, write_sharded_snapshot

    directory = _join(root, "snapshots", suite_slug(corpus), f"{suite_slug(chunker)}-{digest[:12]}")
    manifest_url = _join(directory, MANIFEST)
    try:
        existing = ShardedCorpus(manifest_url)
    except StorageError:
        existing = None
    if existing is not None:
        manifest = {"corpus_fingerprint": existing.corpus_fingerprint, "counts": existing.counts}
        return {"url": manifest_url, "manifest": manifest, "reused": True}
    _ensure_parent(manifest_url)
    manifest = write_sharded_snapshot(directory, rows(), chunker, source=source, numbered=True)
    return {"url": manifest_url, "manifest": manifest, "reused": False}
