"""frontend: the polyglot example's entry, in Python (standard library only).

GET / prices an order: it asks catalog (Node.js) for the items and pricing
(Java) for the price of each, once for every order and a second time for
every other order (1.5 calls to pricing per request). Each request also
costs WORK_US microseconds of the frontend's own CPU. No slowpoke code: the
example shows what slowpoke predicts for services it knows nothing about.
"""

import http.client
import http.server
import itertools
import os
import threading
import time
from urllib.parse import urlsplit

PORT = int(os.environ.get("PORT", "19080"))
WORK_US = float(os.environ.get("WORK_US", "150"))
CATALOG = urlsplit(os.environ.get("CATALOG_URL", "http://127.0.0.1:19081"))
PRICING = urlsplit(os.environ.get("PRICING_URL", "http://127.0.0.1:19082"))

_local = threading.local()
_orders = itertools.count()


def spin(us):
    """Burn us microseconds of this thread's CPU time (not wall time: a
    stopped process must not catch up after it is continued)."""
    end = time.thread_time() + us / 1e6
    while time.thread_time() < end:
        pass


def get(target, path):
    """GET path from target over this thread's kept-alive connection."""
    conns = getattr(_local, "conns", None)
    if conns is None:
        conns = _local.conns = {}
    key = target.netloc
    for attempt in (0, 1):
        conn = conns.get(key)
        if conn is None:
            conn = conns[key] = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise RuntimeError("%s%s: HTTP %d" % (key, path, resp.status))
            return body
        except (OSError, http.client.HTTPException):
            conn.close()
            conns.pop(key, None)
            if attempt:
                raise


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/healthz":
            self.reply(200, b"ok\n")
            return
        try:
            spin(WORK_US)
            items = get(CATALOG, "/items")
            total = float(get(PRICING, "/price"))
            if next(_orders) % 2 == 0:
                total += float(get(PRICING, "/price"))
            self.reply(200, b"%d bytes of items, %.2f\n" % (len(items), total))
        except Exception as e:  # a failed call is a 502, never a crash
            self.reply(502, ("error: %s\n" % e).encode())


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


if __name__ == "__main__":
    Server(("127.0.0.1", PORT), Handler).serve_forever()
