"""A fault-injecting proxy in front of moto's S3 server, for tests of storage that fails as S3
is documented to fail: ``503 SlowDown`` answered instead of a call (throttling), ``500
InternalError`` answered after a PUT succeeded (the outcome unknown to the client, which
retries), and the connection reset after the call was forwarded, with no answer at all.
Seeded, so a test's faults are the same every run; it counts what it injected."""

from __future__ import annotations

import http.client
import random
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

_ERROR = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{message}</Message>"
          "<RequestId>goldkeeper-fault</RequestId></Error>")
_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class FaultyS3:
    """``with FaultyS3(upstream, seed=1, slowdown=0.1, lost_put=0.05) as proxy``: ``proxy.url``
    is the endpoint to give s3fs; ``proxy.injected`` counts the faults by kind, ``proxy.calls``
    the calls that came in."""

    def __init__(self, upstream: str, *, seed: int = 0, slowdown: float = 0.0, lost_put: float = 0.0,
                 reset: float = 0.0) -> None:
        self.upstream = urlparse(upstream)
        self.rng = random.Random(seed)
        self.slowdown, self.lost_put, self.reset = slowdown, lost_put, reset
        self.injected: Counter[str] = Counter()
        self.calls = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _body(self) -> bytes:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    data = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return data
                        data += self.rfile.read(size)
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _answer(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
                self.send_response(status)
                # A HEAD's answer has no body, but its Content-Length is the object's size
                # (s3fs reads a file's size from it): passed through, not counted.
                passed = self.command == "HEAD" and status < 300
                for name, value in headers:
                    if name.lower() not in _HOP and (passed or name.lower() != "content-length"):
                        self.send_header(name, value)
                if not passed:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _error(self, status: int, code: str, message: str) -> None:
                self._answer(status, [("Content-Type", "application/xml")],
                             _ERROR.format(code=code, message=message).encode())

            def _handle(self) -> None:
                body = self._body()
                with proxy.lock:
                    proxy.calls += 1
                    draw = proxy.rng.random()
                    fault = ("slowdown" if draw < proxy.slowdown
                             else "lost_put" if self.command == "PUT" and draw < proxy.slowdown + proxy.lost_put
                             else "reset" if draw < proxy.slowdown + proxy.lost_put + proxy.reset
                             else None)
                    if fault:
                        proxy.injected[fault] += 1
                if fault == "slowdown":
                    self._error(503, "SlowDown", "Please reduce your request rate.")
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                headers["Content-Length"] = str(len(body))
                upstream = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=60)
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                finally:
                    upstream.close()
                if fault == "lost_put" and 200 <= answer.status < 300:  # the write happened; the client is told not
                    self._error(500, "InternalError", "We encountered an internal error. Please try again.")
                    return
                if fault == "reset":  # done upstream, and the connection dropped before any answer
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self._answer(answer.status, answer.getheaders(), data)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> FaultyS3:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
