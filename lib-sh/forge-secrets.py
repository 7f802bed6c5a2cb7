"""forge-secrets.py -- the mitmdump addon of a namespace sandbox with
secrets (SPEC 4.5). mitmdump runs in upstream mode in front of forge-egress,
which makes every allow-list and address decision (with open egress its
rules are "*": every public destination); this addon only decides which TLS
connections are intercepted, where a placeholder is replaced, and keeps the
values out of what goes back into the sandbox.

A TLS connection is intercepted only when its CONNECT names port 443 and a
host of a secret, and the ClientHello's SNI names that same host; every other
connection is tunnelled untouched. In an intercepted tunnel, a request gets
the values only when everything that names its destination names that host
on port 443: the CONNECT authority, the SNI, the host mitmproxy sends it to
(an absolute-form target included) and every Host header and :authority.
Then each "$MSB_<ENV>" of a secret bound to that host is replaced by the
value of ENV in this process's environment (never read from a file, never
written anywhere) in the request's header values only: never in the path,
the query or the body, which servers echo back. Upstream, mitmproxy
verifies the host's certificate for that name, so the value only reaches
the host it is meant for. A response on an intercepted tunnel (headers,
body, WebSocket messages) has every value turned back into its placeholder.

In upstream mode mitmproxy answers a CONNECT with 200 before it asks its
upstream (connection_strategy=eager applies to regular mode only), so a
tunnel forge-egress refuses would open and then fail with a 502 inside it.
Before that answer, the addon sends forge-egress the same CONNECT itself:
a refusal (403 and its one-line reason and X-Forge-Egress header, or any
other status but 2xx) is passed on as the answer; on 2xx it closes that tunnel and mitmproxy opens
its own (forge-egress decides that one again, so nothing passes on the
strength of the first check).

Option forge_secrets: a file of ENV@HOST[,HOST...] lines (names only). A
HOST is a name or *.NAME (NAME itself and every name below it). Host
entries cannot name a port (forge-netrule rejects ':'), so 443 is the only
port a value is sent to.
"""
import asyncio
import os
from urllib.parse import urlsplit

from mitmproxy import ctx, http

PORT = 443
FRAMING = (b"content-length", b"transfer-encoding", b"content-encoding")
CHECK_TIMEOUT = 120  # seconds for forge-egress to answer a CONNECT
REASON_MAX = 4096  # bytes of its answer's body passed on
EGRESS_HEADER = "X-Forge-Egress"  # forge-egress's reason, passed on with a refusal


def _name(host):
    """HOST lower-cased without one trailing dot ("" for none)."""
    host = (host or "").lower()
    return host[:-1] if host.endswith(".") else host


def _authority(value):
    """(name, port) of a Host header value or an authority; None when it is
    malformed or an IP literal (never a secret host)."""
    if not value or value.startswith("[") or value != value.strip():
        return None
    host, sep, port = value.rpartition(":")
    if not sep:
        return _name(value), PORT
    if not port.isdigit() or not host or ":" in host:
        return None
    return _name(host), int(port)


def _matches(entry, name):
    """msb's meaning of a secret host: NAME exactly, or *.X for X and below."""
    if entry.startswith("*."):
        return name == entry[2:] or name.endswith(entry[1:])
    return name == entry


def _answer(status, body, reason=None):
    """A plain-text response STATUS with BODY, the connection closed after;
    REASON, forge-egress's X-Forge-Egress value, passed on when given."""
    headers = {"Content-Type": "text/plain", "Connection": "close"}
    if reason:
        headers[EGRESS_HEADER] = reason
    return http.Response.make(status, body, headers)


def _clean(value):
    """VALUE (bytes) as printable ASCII, any other byte as '?': nothing of it
    can end a header line or drive a terminal (forge-egress's own values
    are clean already; its quotes stay)."""
    return "".join(chr(c) if 0x20 <= c <= 0x7e else "?" for c in value[:REASON_MAX])


class ForgeSecrets:
    def __init__(self):
        self.secrets = []  # [(ENV, [HOST, ...]), ...]
        self.tunnels = {}  # client connection id -> host name of an intercepted tunnel

    def load(self, loader):
        loader.add_option("forge_secrets", str, "", "file of ENV@HOST,... lines")

    def configure(self, updated):
        if "forge_secrets" not in updated or not ctx.options.forge_secrets:
            return
        self.secrets = []
        with open(ctx.options.forge_secrets, encoding="utf-8") as f:
            for line in f:
                env, _, hosts = line.strip().rpartition("@")
                if env:
                    self.secrets.append((env, [_name(h) for h in hosts.split(",") if h]))

    def bound(self, name):
        """The ENVs of the secrets one of whose hosts is NAME."""
        return [env for env, hosts in self.secrets if any(_matches(h, name) for h in hosts)]

    def pairs(self, envs):
        """(placeholder, value) bytes of each ENV set in this environment."""
        for env in envs:
            value = os.environ.get(env)
            if value:
                yield ("$MSB_" + env).encode(), value.encode()

    async def http_connect(self, flow):
        """FLOW's CONNECT as forge-egress answers it, before mitmproxy says
        200 (see the module's text); nothing when another addon answered."""
        if flow.response is not None:
            return
        spec = urlsplit(ctx.options.mode.partition(":")[2])
        try:
            # What mitmproxy sends upstream, byte for byte.
            authority = flow.request.host.encode("idna") + b":%d" % flow.request.port
        except UnicodeError:
            flow.response = _answer(400, b"forge-secrets: the CONNECT names no valid host\n")
            return
        try:
            reader, writer = await asyncio.open_connection(spec.hostname, spec.port)
        except OSError as e:
            flow.response = _answer(502, ("forge-secrets: the allow-list proxy is not running: %s\n" % e).encode())
            return
        try:
            writer.write(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority))
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CHECK_TIMEOUT)
            lines = head.split(b"\r\n")
            status = int(lines[0].split(b" ", 2)[1])
            if 200 <= status < 300:
                return
            length, reason = 0, None
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = min(int(value.strip()), REASON_MAX)
                elif name.strip().lower() == EGRESS_HEADER.lower().encode():
                    reason = _clean(value.strip())
            body = await asyncio.wait_for(reader.readexactly(length), CHECK_TIMEOUT) if length else b""
            flow.response = _answer(status, body, reason)
        except (OSError, ValueError, IndexError, EOFError, asyncio.TimeoutError, asyncio.LimitOverrunError):
            flow.response = _answer(502, b"forge-secrets: the allow-list proxy gave no answer to the CONNECT\n")
        finally:
            writer.close()

    def tls_clienthello(self, data):
        client = data.context.client
        self.tunnels.pop(client.id, None)
        address = data.context.server.address
        sni = _name(data.client_hello.sni)
        if address and address[1] == PORT and sni and _name(address[0]) == sni and self.bound(sni):
            self.tunnels[client.id] = sni
        else:
            data.ignore_connection = True

    def client_disconnected(self, client):
        self.tunnels.pop(client.id, None)

    def destination(self, flow):
        """The host name of FLOW's intercepted tunnel when every name of its
        destination agrees with it, on port 443; else None."""
        name = self.tunnels.get(flow.client_conn.id)
        request = flow.request
        if name is None or request.scheme != "https" or _name(flow.client_conn.sni) != name:
            return None
        address = flow.server_conn.address
        if not address or (_name(address[0]), address[1]) != (name, PORT):
            return None
        if (_name(request.host), request.port) != (name, PORT):
            return None
        named = request.headers.get_all("Host")
        if request.authority:
            named.append(request.authority)
        if not named or any(_authority(v) != (name, PORT) for v in named):
            return None
        return name

    def request(self, flow):
        name = self.destination(flow)
        if name is None:
            return
        fields = flow.request.headers.fields
        for placeholder, secret in self.pairs(self.bound(name)):
            fields = tuple((key, value.replace(placeholder, secret)) for key, value in fields)
        flow.request.headers.fields = fields

    def scrub(self, data):
        """DATA with every secret value replaced by its placeholder."""
        for placeholder, secret in self.pairs(env for env, _ in self.secrets):
            data = data.replace(secret, placeholder)
        return data

    def response(self, flow):
        if flow.client_conn.id not in self.tunnels or flow.response is None:
            return
        response = flow.response
        # Not the framing headers: a numeric value must not break them.
        response.headers.fields = tuple(
            (k, v if k.lower() in FRAMING else self.scrub(v)) for k, v in response.headers.fields)
        try:
            content = response.get_content(strict=True)
        except ValueError:
            content = None
        if content is not None:
            if self.scrub(content) != content:
                response.set_content(self.scrub(content))
        elif response.raw_content:
            response.raw_content = self.scrub(response.raw_content)

    def websocket_message(self, flow):
        message = flow.websocket.messages[-1]
        if flow.client_conn.id in self.tunnels and not message.from_client:
            message.content = self.scrub(message.content)


addons = [ForgeSecrets()]
