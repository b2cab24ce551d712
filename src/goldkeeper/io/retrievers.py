"""Retrievers goldkeeper can call for every judged query: HTTP, a command, a run file, Python.

Each backend answers ``search(query) -> Hits`` for one ``Query`` (id, text, k, mode) or raises
``RetrieverError``: ``transient`` errors (timeouts, refused connections, HTTP 429 and 5xx)
are worth retrying, the others are not. Nothing a backend is configured with from the
environment (header values, tokens) enters ``identity()``, which keys the result cache, or
any error message, run or report.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from goldkeeper.errors import UsageError

__all__ = [
    "BACKENDS",
    "CommandRetriever",
    "Hits",
    "HttpRetriever",
    "PythonRetriever",
    "Query",
    "RetrieverError",
    "RunFileRetriever",
    "hits_from_payload",
    "make_retriever",
    "retry_after_seconds",
]

BACKENDS = ("http", "command", "run-file", "python")


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str
    k: int
    mode: str = ""


@dataclass(frozen=True)
class Hits:
    ids: tuple[str, ...]
    scores: tuple[float, ...] | None = None


class RetrieverError(Exception):
    """``transient``: worth retrying; ``retry_after``: the seconds the server asked to wait
    (HTTP ``Retry-After``), or None."""

    def __init__(self, message: str, *, transient: bool = False, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.transient = transient
        self.retry_after = retry_after


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """An HTTP ``Retry-After`` value (delay-seconds or an HTTP date) as seconds from ``now``
    (Unix time); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    from email.utils import parsedate_to_datetime

    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - now) if moment.tzinfo is not None else None


def _dig(payload: Any, path: str, query: Query) -> Any:
    found = payload
    for part in [p for p in path.split(".") if p]:
        if isinstance(found, Mapping) and part in found:
            found = found[part]
        elif isinstance(found, list) and part.isdigit() and int(part) < len(found):
            found = found[int(part)]
        else:
            raise RetrieverError(f"query {query.query_id}: the response has no '{part}' on the way to "
                                 f"results path '{path}' (found {type(found).__name__})")
    return found


#: rag-eval-gate's answer shape, read when the user named neither field: hits in the answer's
#: ``results`` and an id in a hit's ``docId`` (its defaults), so its retrievers answer unchanged.
PEER_RESULTS, PEER_ID = "results", "docId"


def hits_from_payload(payload: Any, query: Query, results_path: str = "", id_field: str = "id",
                      score_field: str | None = "score") -> Hits:
    """Ranked ids (and scores) from a JSON answer: a list at ``results_path`` whose items are
    ids, or objects carrying ``id_field`` (and ``score_field``, optional: the answer's order is
    its ranking, and its scores are kept only when every hit has one). With no results path an
    object answer's ``results`` is the list, and with the default ``id`` a hit without one may
    carry ``docId`` (rag-eval-gate's defaults)."""
    if results_path:
        rows = _dig(payload, results_path, query)
    elif isinstance(payload, Mapping) and isinstance(payload.get(PEER_RESULTS), list):
        rows = payload[PEER_RESULTS]
    else:
        rows = payload
    if not isinstance(rows, list):
        where = f"results path '{results_path}'" if results_path else "the response"
        raise RetrieverError(f"query {query.query_id}: {where} must be a list of hits, got {type(rows).__name__}")
    ids: list[str] = []
    scores: list[float] = []
    for index, row in enumerate(rows):
        if isinstance(row, str):
            ids.append(row)
            continue
        if id_field == "id" and isinstance(row, Mapping) and "id" not in row and PEER_ID in row:
            row = {**row, "id": row[PEER_ID]}
        if not isinstance(row, Mapping) or not isinstance(row.get(id_field), (str, int)) or isinstance(row.get(id_field), bool):
            raise RetrieverError(f"query {query.query_id}: hit {index} needs a string '{id_field}', got "
                                 f"{json.dumps(row)[:80]}")
        ids.append(str(row[id_field]))
        if score_field and score_field in row:  # the score is optional, as in the seed; a present one must be a number
            value = row[score_field]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise RetrieverError(f"query {query.query_id}: hit {index} needs a finite numeric '{score_field}' "
                                     f"(--score-field '' for hits without scores), got {json.dumps(value)}")
            scores.append(float(value))
    complete = bool(score_field) and len(scores) == len(ids) and not any(isinstance(r, str) for r in rows)
    return Hits(tuple(ids[: query.k]), tuple(scores[: query.k]) if complete else None)


def _fill(template: str, query: Query, encode: Callable[[str], str]) -> str:
    values = {"query": query.text, "query_id": query.query_id, "k": str(query.k), "mode": query.mode}
    out = template
    for name, value in values.items():
        out = out.replace("{" + name + "}", encode(value))
    return out


def _fill_json(node: Any, query: Query) -> Any:
    """The body template with placeholders filled inside its strings: ``"{k}"`` alone becomes
    the number, any other text is substituted verbatim (the JSON encoder escapes it)."""
    if isinstance(node, str):
        if node == "{k}":
            return query.k
        return _fill(node, query, lambda v: v)
    if isinstance(node, list):
        return [_fill_json(item, query) for item in node]
    if isinstance(node, dict):
        return {key: _fill_json(value, query) for key, value in node.items()}
    return node


class HttpRetriever:
    """GET or POST a URL template; ``{query}``, ``{query_id}``, ``{k}``, ``{mode}`` are URL-encoded
    in the URL and filled verbatim into a JSON body template. ``headers_from_env`` maps header
    names to environment variables, read when the retriever is made.

    Each worker thread keeps a connection pool of httpcore (httpx's transport): connections
    stay alive between calls, proxies come from the environment (``HTTPS_PROXY``,
    ``HTTP_PROXY``, ``NO_PROXY``, as curl reads them), certificates are checked against the
    system's store, and redirects are not followed (a 3xx is an error naming where it points).
    A 429 or 5xx passes its ``Retry-After`` to the retry loop (io.retrieval). (httpx's own
    client costs three times the CPU per call, which against a fast retriever was 63% of
    eval's throughput: bench/RESULTS.md.)"""

    def __init__(self, url_template: str, *, method: str = "GET", body_template: str | None = None,
                 results_path: str = "", id_field: str = "id", score_field: str | None = "score",
                 headers_from_env: Mapping[str, str] | None = None, timeout: float = 10.0) -> None:
        method = method.upper()
        if method not in ("GET", "POST"):
            raise UsageError(f"--method: GET or POST, got {method}")
        try:
            parts = urllib.parse.urlsplit(url_template)
            _ = parts.port  # a port that is not a number from 0 to 65535 is refused here
        except ValueError as error:
            raise UsageError(f"--url-template: {str(error).lower()}, got {url_template}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--url-template: an http:// or https:// URL, got {url_template}")
        self.body = None
        if body_template is not None:
            try:
                self.body = json.loads(body_template)
            except json.JSONDecodeError as error:
                raise UsageError(f"--body-template: not JSON ({error.msg})") from None
        headers = {"Accept": "application/json", "User-Agent": "goldkeeper"}
        for name, variable in (headers_from_env or {}).items():
            if variable not in os.environ:
                raise UsageError(f"--header-env {name}={variable}: the environment variable {variable} is not set")
            if not _HEADER_NAME.fullmatch(name):
                raise UsageError(f"--header-env: {name!r} is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)")
            value = os.environ[variable]
            if any((ord(c) < 32 and c != "\t") or ord(c) == 127 for c in value):
                # The value is a secret: never shown, whatever it holds (logs, Prefect states).
                raise UsageError(f"--header-env {name}={variable}: the value of {variable} holds a control character "
                                 "(CR, LF, NUL...), which an HTTP header cannot carry; it is not shown here")
            try:
                value.encode("latin-1")
            except UnicodeEncodeError:
                raise UsageError(f"--header-env {name}={variable}: the value of {variable} holds characters beyond "
                                 "Latin-1, which an HTTP header cannot carry; it is not shown here") from None
            headers[name] = value
        self.url_template, self.method, self.timeout = url_template, method, timeout
        self.results_path, self.id_field, self.score_field = results_path, id_field, score_field
        self.header_names = sorted(set(headers_from_env or {}))
        self.scheme, self.host = parts.scheme, parts.hostname
        self._headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]
        self._extensions = {"timeout": dict.fromkeys(("connect", "read", "write", "pool"), timeout)}
        self._local = threading.local()
        self._pools: list[Any] = []
        self._pools_lock = threading.Lock()
        self._ssl: Any = None

    def identity(self) -> dict[str, Any]:
        return {"backend": "http", "url": self.url_template, "method": self.method, "body": self.body,
                "results_path": self.results_path, "id_field": self.id_field, "score_field": self.score_field,
                "headers": self.header_names}

    def _pool(self) -> Any:
        pool = getattr(self._local, "pool", None)
        if pool is None:
            import ssl
            import urllib.request

            import httpcore

            proxies = urllib.request.getproxies_environment()
            proxy = proxies.get(self.scheme)
            if proxy and urllib.request.proxy_bypass_environment(self.host, proxies):
                proxy = None
            with self._pools_lock:
                if self._ssl is None and self.scheme == "https":
                    self._ssl = ssl.create_default_context()  # (loading the system's certificates takes a while)
                pool = self._local.pool = (httpcore.HTTPProxy(proxy_url=proxy, ssl_context=self._ssl) if proxy
                                           else httpcore.ConnectionPool(ssl_context=self._ssl))
                self._pools.append(pool)
        return pool

    def search(self, query: Query) -> Hits:
        import httpcore

        url = _fill(self.url_template, query, lambda v: urllib.parse.quote(v, safe=""))
        content, headers = None, self._headers
        if self.method == "POST":
            content = json.dumps(_fill_json(self.body, query) if self.body is not None else None).encode("utf-8")
            headers = [*headers, (b"Content-Type", b"application/json")]
        try:
            response = self._pool().request(self.method, url, headers=headers, content=content,
                                            extensions=self._extensions)
        except httpcore.TimeoutException:
            raise RetrieverError(f"query {query.query_id}: no answer within the timeout", transient=True) from None
        except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError, httpcore.UnsupportedProtocol,
                OSError) as error:  # the type only: no header value
            raise RetrieverError(f"query {query.query_id}: {type(error).__name__}", transient=True) from None
        status = response.status
        found = {name.lower(): value.decode("latin-1") for name, value in response.headers}
        if status >= 400:
            import time

            transient = status == 429 or status >= 500
            wait = retry_after_seconds(found.get(b"retry-after"), time.time()) if transient else None
            raise RetrieverError(f"query {query.query_id}: HTTP {status}", transient=transient, retry_after=wait)
        if not 200 <= status < 300:  # a redirect's body is not the retriever's answer
            moved = f" to {found[b'location']}" if b"location" in found else ""
            raise RetrieverError(f"query {query.query_id}: HTTP {status}, a redirect{moved}, which goldkeeper "
                                 "does not follow: give --url-template the final address", transient=False)
        try:
            payload = json.loads(response.content)
        except ValueError:
            raise RetrieverError(f"query {query.query_id}: the response is not JSON "
                                 f"({found.get(b'content-type') or 'no content type'})") from None
        return hits_from_payload(payload, query, self.results_path, self.id_field, self.score_field)

    def close(self) -> None:
        for pool in self._pools:
            pool.close()


_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")

#: Placeholders whose values come from the data (the judgments), not from the user: only these
#: must follow ``--`` or be attached to an option; ``{mode}`` and ``{k}`` are the user's own.
_DATA_PLACEHOLDERS = ("{query}", "{query_id}")


class CommandRetriever:
    """Run an argv template without a shell: each placeholder fills whole arguments, so a
    query containing quotes, ``$(...)``, ``;`` or newlines reaches the program verbatim.
    The program prints JSON (a hit list, or an object holding one at ``results_path``)."""

    def __init__(self, argv: Sequence[str], *, results_path: str = "", id_field: str = "id",
                 score_field: str | None = "score", timeout: float = 10.0) -> None:
        if not argv:
            raise UsageError("--command: give the program and its arguments")
        # A query (or its id) that begins with "-" must never be read as an option: an argument
        # starting with one is allowed only after "--" (spec/eval.md).
        options_end = list(argv).index("--") if "--" in argv else len(argv)
        for position, part in enumerate(argv[1:options_end], start=1):
            if part.startswith(_DATA_PLACEHOLDERS):
                raise UsageError(f"--command: argument {position} ({part}) starts with a placeholder before any '--', "
                                 "so a query beginning with '-' would reach the program as an option",
                                 hint="put '--' before it, or attach it to an option ('--query={query}'); the query "
                                      "is also in the environment as GOLDKEEPER_QUERY")
        self.argv = list(argv)
        self.results_path, self.id_field, self.score_field, self.timeout = results_path, id_field, score_field, timeout

    def identity(self) -> dict[str, Any]:
        return {"backend": "command", "argv": self.argv, "results_path": self.results_path,
                "id_field": self.id_field, "score_field": self.score_field}

    def search(self, query: Query) -> Hits:
        argv = [_fill(part, query, lambda v: v) for part in self.argv]
        env = {**os.environ, "GOLDKEEPER_QUERY": query.text, "GOLDKEEPER_QUERY_ID": query.query_id,
               "GOLDKEEPER_K": str(query.k), "GOLDKEEPER_MODE": query.mode}
        try:
            done = subprocess.run(argv, capture_output=True, timeout=self.timeout, check=False, env=env)
        except subprocess.TimeoutExpired:
            raise RetrieverError(f"query {query.query_id}: the command ran past the timeout", transient=True) from None
        except OSError as error:
            raise RetrieverError(f"query {query.query_id}: cannot run {argv[0]}: {error.strerror}") from None
        if done.returncode != 0:
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            raise RetrieverError(f"query {query.query_id}: the command exited {done.returncode}: {tail[0][:200]}")
        try:
            payload = json.loads(done.stdout)
        except ValueError:
            raise RetrieverError(f"query {query.query_id}: the command did not print JSON") from None
        return hits_from_payload(payload, query, self.results_path, self.id_field, self.score_field)

    def close(self) -> None:
        pass


class PythonRetriever:
    """``module:function`` called as ``function(query, k=k, mode=mode)``; it returns ranked ids,
    ``(id, score)`` pairs, or hit objects like an HTTP answer's."""

    def __init__(self, target: str, *, id_field: str = "id", score_field: str | None = "score") -> None:
        module_name, _, name = target.partition(":")
        if not module_name or not name:
            raise UsageError(f"--python: module:function, got {target}")
        # The current directory first, as `python -m` and pytest have it: the installed
        # `goldkeeper` script's own directory is on sys.path instead, and `--python
        # retriever:search` beside the judgments must find retriever.py.
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise UsageError(f"--python {target}: {error}") from None
        except Exception as error:  # the user's module failed as it loaded: theirs to fix, not ours
            raise UsageError(f"--python {target}: importing {module_name} raised {type(error).__name__}: {error}") from None
        try:
            function = getattr(module, name)
        except AttributeError as error:
            raise UsageError(f"--python {target}: {error}") from None
        if not callable(function):
            raise UsageError(f"--python {target}: not callable")
        self.target, self.function, self.id_field, self.score_field = target, function, id_field, score_field

    def identity(self) -> dict[str, Any]:
        return {"backend": "python", "target": self.target}

    def search(self, query: Query) -> Hits:
        try:
            found = self.function(query.text, k=query.k, mode=query.mode)
        except Exception as error:
            raise RetrieverError(f"query {query.query_id}: {type(error).__name__}: {error}") from None
        if isinstance(found, list) and found and isinstance(found[0], tuple):
            try:
                pairs = [(str(i), float(s)) for i, s in found]
            except (TypeError, ValueError):
                raise RetrieverError(f"query {query.query_id}: (id, score) pairs expected") from None
            if not all(math.isfinite(s) for _, s in pairs):
                raise RetrieverError(f"query {query.query_id}: every score must be a finite number")
            return Hits(tuple(i for i, _ in pairs[: query.k]), tuple(s for _, s in pairs[: query.k]))
        return hits_from_payload(found, query, "", self.id_field, self.score_field)

    def close(self) -> None:
        pass


class RunFileRetriever:
    """A TREC run or run JSONL, read once and answered by query id (no call is made)."""

    def __init__(self, url: str) -> None:
        from goldkeeper.io.loading import load_run

        entries, hashed = load_run(url)
        self.entries = {entry.query_id: entry for entry in entries}
        self.url, self.sha256 = url, hashed.hexdigest()

    def identity(self) -> dict[str, Any]:
        return {"backend": "run-file", "sha256": self.sha256}

    def search(self, query: Query) -> Hits:
        entry = self.entries.get(query.query_id)
        if entry is None:
            raise RetrieverError(f"query {query.query_id}: not in the run file")
        return Hits(tuple(entry.ranking[: query.k]),
                    tuple(entry.scores[: query.k]) if entry.scores is not None else None)

    def close(self) -> None:
        pass


def make_retriever(config: Mapping[str, Any]) -> Any:
    """A retriever from a plain configuration (what the CLI's flags and a flow's parameters
    carry): ``backend`` plus that backend's options. Header values never appear in it, only
    the names of the environment variables that hold them (``header_env``)."""
    backend = config.get("backend", "http")
    fields = {"results_path": config.get("results_path", ""), "id_field": config.get("id_field", "id"),
              "score_field": config.get("score_field", "score") or None}
    timeout = float(config.get("timeout", 10.0))
    if backend == "http":
        if not config.get("url_template"):
            raise UsageError("--backend http needs --url-template")
        headers = {}
        for item in config.get("header_env", []):
            name, _, variable = item.partition("=")
            if not name or not variable:
                raise UsageError(f"--header-env: NAME=ENV_VARIABLE, got {item}")
            headers[name] = variable
        return HttpRetriever(config["url_template"], method=config.get("method", "GET"),
                             body_template=config.get("body_template"), headers_from_env=headers, timeout=timeout,
                             **fields)
    if backend == "command":
        command = config.get("command")
        if not command:
            raise UsageError("--backend command needs --command")
        if isinstance(command, list):
            argv = command
        elif command.lstrip().startswith("["):
            try:
                argv = json.loads(command)
            except json.JSONDecodeError as error:
                raise UsageError(f"--command: a JSON list of arguments, or a command line; {error.msg}") from None
        else:
            import shlex

            try:
                argv = shlex.split(command)  # split before filling, so a query is always one argument
            except ValueError as error:  # an unclosed quote, a trailing backslash
                raise UsageError(f"--command: {str(error).lower()}, in {command}") from None
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise UsageError("--command: a JSON list must hold strings only")
        return CommandRetriever(argv, timeout=timeout, **fields)
    if backend == "python":
        if not config.get("python"):
            raise UsageError("--backend python needs --python module:function")
        return PythonRetriever(config["python"], id_field=fields["id_field"], score_field=fields["score_field"])
    if backend == "run-file":
        if not config.get("run_file"):
            raise UsageError("--backend run-file needs --run-file")
        return RunFileRetriever(config["run_file"])
    raise UsageError(f"--backend: one of {', '.join(BACKENDS)}, got {backend}")
