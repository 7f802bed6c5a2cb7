"""forge-secrets.py -- the mitmdump addon of a namespace sandbox with
secrets (SPEC 4.5). mitmdump runs in upstream mode in front of forge-egress,
which makes every allow-list and address decision; this addon only decides
which TLS connections are intercepted and substitutes the placeholders.

A TLS connection is intercepted only when the host of its CONNECT is a host
of a secret and the ClientHello names that same host (or none); everything
else is tunnelled untouched. In an intercepted request, every "$MSB_<ENV>"
of a secret whose hosts include that host is replaced by the value of ENV
in this process's environment (never read from a file, never written
anywhere). Upstream, mitmproxy verifies the host's certificate for that
name, so the value only reaches the host it is meant for.

Option forge_secrets: a file of ENV@HOST[,HOST...] lines (names only).
"""
import os

from mitmproxy import ctx


class ForgeSecrets:
    def __init__(self):
        self.hosts = {}  # host -> [ENV, ...]

    def load(self, loader):
        loader.add_option("forge_secrets", str, "", "file of ENV@HOST,... lines")

    def configure(self, updated):
        if "forge_secrets" not in updated or not ctx.options.forge_secrets:
            return
        self.hosts = {}
        with open(ctx.options.forge_secrets, encoding="utf-8") as f:
            for line in f:
                env, _, hosts = line.strip().rpartition("@")
                for host in filter(None, hosts.split(",")):
                    self.hosts.setdefault(host.lower(), []).append(env)

    def tls_clienthello(self, data):
        host = (data.context.server.address or ("",))[0].lower()
        sni = (data.client_hello.sni or host).lower()
        if host not in self.hosts or sni != host:
            data.ignore_connection = True

    def request(self, flow):
        host = (flow.server_conn.address or ("",))[0].lower()
        if flow.request.scheme != "https" or host not in self.hosts:
            return
        for env in self.hosts[host]:
            value = os.environ.get(env)
            if value is None:
                continue
            placeholder = ("$MSB_" + env).encode()
            secret = value.encode()
            flow.request.headers.fields = tuple(
                (name, field.replace(placeholder, secret)) for name, field in flow.request.headers.fields)
            if flow.request.content and placeholder in flow.request.content:
                flow.request.content = flow.request.content.replace(placeholder, secret)
            if placeholder.decode() in flow.request.path:
                flow.request.path = flow.request.path.replace(placeholder.decode(), value)


addons = [ForgeSecrets()]
