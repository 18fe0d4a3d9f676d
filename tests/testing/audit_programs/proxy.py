"""A small pass-through gateway for the gateway-mode tests, optionally with a mapping bug.

`start_proxy(upstream, length_to_stop=True)` rewrites ``"finish_reason": "length"`` to
``"stop"``, the bug of gateways that normalise finish reasons.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def start_proxy(upstream: str, *, length_to_stop: bool = False) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            keep = {
                k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")
            }
            req = urllib.request.Request(
                upstream + self.path, data=body, headers=keep, method="POST"
            )
            try:
                with urllib.request.urlopen(req, timeout=30) as resp:
                    status, data, ctype = resp.status, resp.read(), resp.headers.get("content-type")
            except urllib.error.HTTPError as exc:
                status, data, ctype = exc.code, exc.read(), exc.headers.get("content-type")
            if length_to_stop:
                data = data.replace(b'"finish_reason":"length"', b'"finish_reason":"stop"')
                data = data.replace(b'"finish_reason": "length"', b'"finish_reason": "stop"')
            self.send_response(status)
            self.send_header("content-type", ctype or "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
