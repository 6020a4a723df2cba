"""The measuring client of bench/egress.mjs, the same on the host and in a sandbox.

run(config) makes small HTTPS and HTTP GETs and large downloads against the benchmark's upstream
on 127.0.0.1, by one of three paths (config["via"]):
  "direct": TCP straight to the upstream (the host baseline);
  "unix":   the session's egress proxy socket (AF_UNIX; CONNECT for HTTPS, absolute-form GET
            for HTTP), from the host: the proxy's own cost;
  "tcp":    the proxy at 127.0.0.1:<proxy_port>, from inside the sandbox (the agent's forwarder,
            gVisor and the proxy): what sandboxed code sees.
TLS always runs end to end with the upstream (SNI: none, the target is an address). It returns
the raw samples: milliseconds per request, MiB/s per download.

  python3 egress_client.py '{"via": "direct", "ca": "...PEM...", "https_port": 1, ...}'
"""
import http.client
import json
import socket
import ssl
import sys
import time

HOST = "127.0.0.1"  # never any other address: the benchmark's traffic stays on loopback
SMALL = "/small"
WARMUP = 5


def _nodelay(sock):
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class Path:
    def __init__(self, config):
        self.via = config["via"]
        self.socket_path = config.get("socket")
        self.proxy_port = config.get("proxy_port")
        self.context = ssl.create_default_context(cadata=config["ca"])

    def _to_proxy(self):
        if self.via == "unix":
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(self.socket_path)
            return sock
        return _nodelay(socket.create_connection((HOST, self.proxy_port)))

    def _tunnel(self, port):
        sock = self._to_proxy()
        authority = f"{HOST}:{port}"
        sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:  # the proxy sends nothing after its answer until we do
            chunk = sock.recv(4096)
            if not chunk:
                raise RuntimeError(f"the proxy closed the tunnel: {head!r}")
            head += chunk
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"CONNECT refused: {head!r}")
        return sock

    def https(self, port):
        """An HTTPConnection speaking TLS to the upstream's HTTPS port. The time its stream took
        to open (TCP connect, or connect + CONNECT until the 200) is left in last_open_ms."""
        start = time.perf_counter()
        raw = _nodelay(socket.create_connection((HOST, port))) if self.via == "direct" \
            else self._tunnel(port)
        self.last_open_ms = (time.perf_counter() - start) * 1000
        connection = http.client.HTTPConnection(HOST, port)
        connection.sock = self.context.wrap_socket(raw, server_hostname=HOST)
        return connection, "/"

    def http(self, port):
        """An HTTPConnection for one plain-HTTP request, and the prefix its path takes."""
        connection = http.client.HTTPConnection(HOST, port)
        if self.via == "direct":
            connection.sock = _nodelay(socket.create_connection((HOST, port)))
            return connection, "/"
        connection.sock = self._to_proxy()
        return connection, f"http://{HOST}:{port}/"


def _get(connection, target, close):
    connection.request("GET", target, headers={"Connection": "close"} if close else {})
    response = connection.getresponse()
    body = response.read()
    if response.status != 200:
        raise RuntimeError(f"GET {target}: {response.status} {response.reason}: {body[:300]!r}")
    return body


def new_connection_ms(path, open_connection, port, n):
    """n GETs, each on a new connection (a new tunnel and TLS handshake for HTTPS); and how
    long each stream took to open, when open_connection says (path.last_open_ms)."""
    samples, opens = [], []
    for i in range(WARMUP + n):
        path.last_open_ms = None
        start = time.perf_counter()
        connection, prefix = open_connection(port)
        _get(connection, prefix + SMALL[1:], close=True)
        connection.close()
        if i >= WARMUP:
            samples.append((time.perf_counter() - start) * 1000)
            if path.last_open_ms is not None:
                opens.append(path.last_open_ms)
    return samples, opens


def keepalive_ms(path, port, n):
    """n GETs on one TLS connection (one tunnel), after it is open."""
    connection, prefix = path.https(port)
    samples = []
    for i in range(WARMUP + n):
        start = time.perf_counter()
        _get(connection, prefix + SMALL[1:], close=False)
        if i >= WARMUP:
            samples.append((time.perf_counter() - start) * 1000)
    connection.close()
    return samples


def download_mib_s(open_connection, port, size):
    """One GET of `size` bytes, from the request to the last byte; MiB/s."""
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    start = time.perf_counter()
    connection, prefix = open_connection(port)
    connection.request("GET", f"{prefix}zeros/{size}", headers={"Connection": "close"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"download: {response.status} {response.reason}")
    got = 0
    while True:
        n = response.readinto(view)
        if not n:
            break
        got += n
    seconds = time.perf_counter() - start
    connection.close()
    if got != size:
        raise RuntimeError(f"download: {got} bytes of {size}")
    return size / (1 << 20) / seconds


def run(config):
    path = Path(config)
    out = {}
    n = config.get("n", 0)
    if n:
        out["https_new"], out["https_open"] = new_connection_ms(path, path.https,
                                                                config["https_port"], n)
        out["https_keepalive"] = keepalive_ms(path, config["https_port"], n)
        out["http_new"], _ = new_connection_ms(path, path.http, config["http_port"], n)
    size = config.get("download_bytes", 0)
    if size:
        out["download_https"] = [download_mib_s(path.https, config["https_port"], size)]
        out["download_http"] = [download_mib_s(path.http, config["http_port"], size)]
    return out


if __name__ == "__main__":
    print(json.dumps(run(json.loads(sys.argv[1]))))
