"""A STUB of an LLM judge, for demos and tests: a local HTTP server that speaks the OpenAI
chat-completions API (``POST /v1/chat/completions``) and grades by a rule, not a model.

It is no judge of anything. It reads the query and passage out of goldkeeper's prompt, takes
the true grade from ``truth`` (``(query, passage) -> grade``) or, for pairs it was not told,
from the share of the query's words the passage holds, and then errs as configured, each draw
seeded by the request, so a run against it is repeatable:

- ``noise``: the share of answers that are a uniformly drawn grade instead;
- ``bias``: the share that are one grade too high (capped at the top);
- ``latency``: seconds each answer takes;
- ``failures``: kind -> share of calls: ``http500``, ``http429`` (with ``Retry-After: 0``) and
  ``timeout`` (the answer comes after ``hang`` seconds) fail that call only, so a retry may
  pass; ``malformed``, ``refusal`` and ``out-of-scale`` answers are the same for the same
  question, every time.

Asked for spans (the prompt asks for ``"quote"``), it quotes the sentence of the passage that
holds the most of the query's words (``quotes`` tells it others: ``(query, passage) -> words``),
null for grade 0; the failure kind ``misquote`` is the share of quotes that are words the
passage does not hold.

``GET /stats`` says how many chat calls it served. Run it alone with
``python -m goldkeeper.examples.stub_judge --port 8089 [--noise 0.1] [--bias 0.1] [--latency 0.05]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["StubJudge", "main"]

_QUERY = re.compile(r"^Query: (.*)$", re.MULTILINE)
_PASSAGE = re.compile(r"^Passage: (.*?)\n\nGrade", re.MULTILINE | re.DOTALL)
_TOP = re.compile(r"from 0 to ([0-9]+)")
_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
TRANSIENT = ("http500", "http429", "timeout")
ANSWERS = ("malformed", "refusal", "out-of-scale")
QUOTES = ("misquote",)


def _draw(*parts: Any) -> float:
    """A number in [0, 1) fixed by ``parts``."""
    digest = hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many clients at once: the default backlog of 5 refuses some


class StubJudge:
    """The stub's rules (see the module docstring) and its HTTP server on loopback."""

    def __init__(self, truth: Mapping[tuple[str, str], int] | None = None, *, noise: float = 0.0, bias: float = 0.0,
                 latency: float = 0.0, failures: Mapping[str, float] | None = None, hang: float = 5.0,
                 seed: int = 0, model: str = "stub-judge", quotes: Mapping[tuple[str, str], str] | None = None,
                 ) -> None:
        unknown = set(failures or {}) - {*TRANSIENT, *ANSWERS, *QUOTES}
        if unknown:
            raise ValueError(f"stub judge: unknown failure kinds {sorted(unknown)}")
        self.truth, self.noise, self.bias, self.latency = dict(truth or {}), noise, bias, latency
        self.quotes = dict(quotes or {})
        self.failures, self.hang, self.seed, self.model = dict(failures or {}), hang, seed, model
        self.calls = 0
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    def true_grade(self, query: str, passage: str, top: int) -> int:
        if (query, passage) in self.truth:
            return self.truth[query, passage]
        words = {w.lower() for w in _WORD.findall(query)}
        held = {w.lower() for w in _WORD.findall(passage)}
        return round(top * len(words & held) / len(words)) if words else 0

    def quote(self, query: str, passage: str) -> str:
        """The words it quotes as answering ``query`` in ``passage``."""
        if (query, passage) in self.quotes:
            return self.quotes[query, passage]
        words = {w.lower() for w in _WORD.findall(query)}
        sentences = [m.group(0).strip() for m in _SENTENCE.finditer(passage) if m.group(0).strip()] or [passage]
        return max(sentences, key=lambda s: len(words & {w.lower() for w in _WORD.findall(s)}))

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any] | None]:
        """The status, headers and JSON body of the answer to one request."""
        text = "\n".join(m.get("content", "") for m in body.get("messages", []) if isinstance(m, dict))
        with self.lock:
            self.calls += 1
            attempt = self.seen[text]
            self.seen[text] += 1
        share = 0.0
        transient = _draw(self.seed, "call", text, attempt)
        for kind in TRANSIENT:
            share += self.failures.get(kind, 0.0)
            if transient < share:
                if kind == "timeout":
                    time.sleep(self.hang)
                    break
                return (500 if kind == "http500" else 429), {"Retry-After": "0"}, {"error": {"message": kind}}
        if self.latency:
            time.sleep(self.latency)
        query, passage, top = _QUERY.search(text), _PASSAGE.search(text), _TOP.search(text)
        if not (query and passage and top):
            return 400, {}, {"error": {"message": "the stub judge reads goldkeeper's prompt only"}}
        q, p, t = query.group(1), passage.group(1), int(top.group(1))
        grade = self.true_grade(q, p, t)
        if _draw(self.seed, "noise", q, p) < self.noise:
            grade = int(_draw(self.seed, "grade", q, p) * (t + 1))
        elif _draw(self.seed, "bias", q, p) < self.bias:
            grade = min(t, grade + 1)
        content, refusal = json.dumps({"grade": grade}), None
        if '"quote"' in text:
            words = self.quote(q, p) if grade else None
            if words is not None and _draw(self.seed, "misquote", q, p) < self.failures.get("misquote", 0.0):
                words = "words this passage does not hold"
            content = json.dumps({"grade": grade, "quote": words})
        share, answer = 0.0, _draw(self.seed, "answer", q, p)
        for kind in ANSWERS:
            share += self.failures.get(kind, 0.0)
            if answer < share:
                content, refusal = {"malformed": ("The grade is two.", None), "refusal": (None, "I can't help with that."),
                                    "out-of-scale": (json.dumps({"grade": t + 1}), None)}[kind]
                break
        message = {"role": "assistant", "content": content, **({"refusal": refusal} if refusal else {})}
        return 200, {}, {"id": "stub", "object": "chat.completion", "model": self.model,
                         "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": len(text.split()), "completion_tokens": 5,
                                   "total_tokens": len(text.split()) + 5}}

    def start(self, port: int = 0) -> str:
        """Serve on 127.0.0.1 (``port`` 0: any free one) in a thread; the base URL (``.../v1``)."""
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, headers: Mapping[str, str], body: Any) -> None:
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # a client that timed out left
                    pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/stats"):
                    self._send(200, {}, {"calls": stub.calls})
                else:
                    self._send(404, {}, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError:
                    self._send(400, {}, {"error": {"message": "not JSON"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {}, {"error": {"message": "not found"}})
                    return
                self._send(*stub.answer(body))

        self.server = _Server(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A STUB of an LLM judge (chat-completions API), for demos and tests.")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--noise", type=float, default=0.0)
    parser.add_argument("--bias", type=float, default=0.0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    stub = StubJudge(noise=args.noise, bias=args.bias, latency=args.latency, seed=args.seed)
    print(f"stub judge (not a model) at {stub.start(args.port)}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        stub.stop()


if __name__ == "__main__":
    main()
