"""httpkit: the local web server the e2e files that download a job's artifacts share (test_artifacts.py: jars over
https and http; test_sql_remote.py: a SQL script and a jar over http)."""
import http.server
import ssl
import threading

from testkit import free_port


class Server:
    """An https server on 127.0.0.1 (http without a certificate) serving one directory, recording each request's
    headers; routes maps a path to a function(handler, server) that answers it instead."""

    def __init__(self, root, cert=None, key=None, routes=None):
        self.requests = []
        self.closing = threading.Event()
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=root, **kw)

            def do_GET(self):
                outer.requests.append((self.path, dict(self.headers)))
                route = (routes or {}).get(self.path.split("?")[0])
                if route:
                    try:
                        return route(self, outer)
                    except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
                        return None  # the client gave up
                return super().do_GET()

            def log_message(self, *a):
                pass

        self.port = free_port()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        if cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert, key)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()
