"""A test web server for t/egress.bats: answers every request with what it
received (the address it was reached on, Host, path, Authorization, and the
body when there is one), and appends the same line to LOG. With CERT and KEY
it speaks TLS.

usage: python3 server.py ADDRESS PORT LOG [CERT KEY]
"""
import http.server
import socketserver
import ssl
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def report(self):
        line = "%s host=%s path=%s auth=%s\n" % (
            self.connection.getsockname()[0], self.headers.get("Host", "-"),
            self.path, self.headers.get("Authorization", "-"))
        length = int(self.headers.get("Content-Length", "0"))
        if length:
            line = line[:-1] + " body=%s\n" % self.rfile.read(length).decode("utf-8", "replace")
        with open(sys.argv[3], "a", encoding="utf-8") as log:
            log.write(line)
        body = line.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = report

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server((sys.argv[1], int(sys.argv[2])), Handler)
if len(sys.argv) > 5:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[4], sys.argv[5])
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
server.serve_forever()
