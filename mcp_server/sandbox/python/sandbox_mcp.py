"""Call MCP servers from inside a sandbox-mcp sandbox.

The sandbox has no network. A session created with ``mcp_allowlist`` has one door out: its
sidecar, an HTTP relay on the Unix socket named by ``MCP_PROXY_SOCKET`` (/run/mcp/mcp.sock)
that forwards only to the URLs on the list. This module is a small MCP client (Streamable HTTP,
JSON or SSE answers) that talks through it. Standard library only.

    from sandbox_mcp import connect
    c = connect("http://localhost:8265/mcp")
    print([t["name"] for t in c.list_tools()])
    print(c.call_tool("echo", {"message": "hi"}))

Errors: ``PolicyDenied`` (the allowlist refused the URL, method or tool), ``McpError`` for
everything else (JSON-RPC errors carry ``code``; HTTP-level ones carry ``status`` and ``body``).
"""

import json
import os
import socket
import ssl
from urllib.parse import urlsplit

__all__ = ["connect", "Client", "McpError", "PolicyDenied"]

LATEST_PROTOCOL_VERSION = "2025-06-18"


class McpError(Exception):
    """A failed MCP call: a JSON-RPC error (code, data) or an HTTP failure (status, body)."""

    def __init__(self, message, code=None, data=None, status=None, body=None):
        super().__init__(message)
        self.code = code
        self.data = data
        self.status = status
        self.body = body


class PolicyDenied(McpError):
    """The sidecar's allowlist refused the request (HTTP 403)."""


class _StaleConnection(Exception):
    """A kept-alive connection was closed before the request got any answer."""


class _Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-case names
        self.body = body


def _read_until(sock, buffer, marker):
    while marker not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise McpError("the connection closed before the HTTP response was complete")
        buffer += chunk
    head, _, rest = buffer.partition(marker)
    return head, rest


def _read_exact(sock, buffer, size):
    while len(buffer) < size:
        chunk = sock.recv(max(65536, size - len(buffer)))
        if not chunk:
            raise McpError("the connection closed in the middle of the HTTP response body")
        buffer += chunk
    return buffer[:size], buffer[size:]


def _read_body(sock, headers, rest):
    """The body, and whether the connection may carry another request afterwards."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = b""
        while True:
            line, rest = _read_until(sock, rest, b"\r\n")
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                _, rest = _read_until(sock, rest, b"\r\n")  # trailers end with an empty line
                return body, not rest  # bytes past the end would be a protocol error
            data, rest = _read_exact(sock, rest, size + 2)
            body += data[:-2]
    if "content-length" in headers:
        body, rest = _read_exact(sock, rest, int(headers["content-length"]))
        return body, not rest
    chunks = [rest]
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)


def _sse_messages(body):
    """JSON-RPC messages in a text/event-stream body (events without data are skipped)."""
    messages = []
    for event in body.decode("utf-8", "replace").replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip(" ") if line.startswith("data:") else None
                for line in event.split("\n")]
        data = [d for d in data if d is not None]
        if data:
            try:
                messages.append(json.loads("\n".join(data)))
            except ValueError:
                pass
    return messages


class Client:
    """One MCP session with one server, through the sidecar (or directly, see connect()).

    Requests reuse one connection (HTTP keep-alive): in a sandbox every new connection to the
    sidecar costs a round trip through gVisor. Not thread-safe: use one Client per thread.
    """

    def __init__(self, url, proxy_socket, timeout, protocol_version):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise McpError("'%s' is not an http(s) URL of an MCP server" % url)
        self.url = url
        self._parts = parts
        self._proxy_socket = proxy_socket
        self._timeout = timeout
        self._next_id = 0
        self._sock = None  # the kept-alive connection, if any
        self.session_id = None
        self.protocol_version = protocol_version
        self.server_info = None
        self.capabilities = None

    # --- transport ---------------------------------------------------------------------------
    def _open(self):
        if self._proxy_socket:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self._timeout)
            try:
                sock.connect(self._proxy_socket)
            except (FileNotFoundError, ConnectionRefusedError) as e:
                sock.close()
                raise McpError(
                    "the MCP sidecar is not running at %s (%s); the session's next run_code or "
                    "run_shell call restarts it" % (self._proxy_socket, e.strerror)) from e
            except OSError:
                sock.close()
                raise
            return sock
        port = self._parts.port or (443 if self._parts.scheme == "https" else 80)
        sock = socket.create_connection((self._parts.hostname, port), timeout=self._timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._parts.scheme == "https":
            sock = ssl.create_default_context().wrap_socket(
                sock, server_hostname=self._parts.hostname)
        return sock

    def _http(self, method, payload=None):
        # Through the sidecar the request target is the absolute URL; directly, just the path.
        target = self.url if self._proxy_socket else (
            (self._parts.path or "/") + ("?" + self._parts.query if self._parts.query else ""))
        body = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
        lines = [
            "%s %s HTTP/1.1" % (method, target),
            "Host: %s" % self._parts.netloc.rpartition("@")[2],
            "Accept: application/json, text/event-stream",
            "MCP-Protocol-Version: %s" % self.protocol_version,
        ]
        if payload is not None:
            lines += ["Content-Type: application/json", "Content-Length: %d" % len(body)]
        if self.session_id:
            lines.append("Mcp-Session-Id: %s" % self.session_id)
        request = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
        reused = self._sock is not None
        try:
            return self._exchange(request)
        except _StaleConnection:
            if not reused:
                raise McpError("%s closed the connection without answering" % self.url)
            # The kept-alive connection had been closed by the other side while idle; the
            # request was never read, so sending it again on a new connection is safe.
            return self._exchange(request)

    def _exchange(self, request):
        if self._sock is None:
            self._sock = self._open()
        sock, self._sock = self._sock, None  # put back only after a complete, reusable answer
        try:
            try:
                sock.sendall(request)
                head, rest = _read_until(sock, b"", b"\r\n\r\n")
            except (McpError, BrokenPipeError, ConnectionResetError) as e:
                raise _StaleConnection() from e
            status_line, *header_lines = head.decode("iso-8859-1").split("\r\n")
            status = int(status_line.split(" ", 2)[1])
            headers = {}
            for line in header_lines:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body, reusable = _read_body(sock, headers, rest)
            if reusable and headers.get("connection", "").lower() != "close":
                self._sock, sock = sock, None
            return _Response(status, headers, body)
        except socket.timeout as e:
            raise McpError("no answer from %s within %s s" % (self.url, self._timeout)) from e
        finally:
            if sock is not None:
                sock.close()

    def _check(self, response):
        if 200 <= response.status < 300:
            return
        text = response.body.decode("utf-8", "replace")
        if 300 <= response.status < 400:
            raise McpError(
                "%s redirected (HTTP %d) to %s; redirects are not followed: the new URL must be "
                "on the session's mcp_allowlist too" % (
                    self.url, response.status, response.headers.get("location", "?")),
                status=response.status, body=text)
        if response.status == 403:
            detail = text
            try:
                parsed = json.loads(text)
                if isinstance(parsed, list) and parsed:
                    parsed = parsed[0]
                if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
                    error = parsed["error"]
                    raise PolicyDenied("the sidecar refused the call: %s" % error.get("message"),
                                       code=error.get("code"), data=error.get("data"),
                                       status=403, body=text)
                if isinstance(parsed, dict) and "error" in parsed:
                    detail = parsed["error"]
            except ValueError:
                pass
            raise PolicyDenied("the sidecar refused %s: %s" % (self.url, detail),
                               status=403, body=text)
        meaning = {502: "the MCP server is unreachable", 503: "the sidecar is busy",
                   504: "the MCP server did not answer in time",
                   413: "the request is too large"}.get(response.status, "HTTP error")
        raise McpError("%s (HTTP %d from %s): %s" % (meaning, response.status, self.url,
                                                     text.strip()[:500]),
                       status=response.status, body=text)

    # --- JSON-RPC ----------------------------------------------------------------------------
    def request(self, method, params=None):
        """Sends a JSON-RPC request and returns its result; raises McpError on an error."""
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        response = self._http("POST", message)
        self._check(response)
        if response.headers.get("mcp-session-id"):
            self.session_id = response.headers["mcp-session-id"]
        content_type = response.headers.get("content-type", "")
        if content_type.startswith("text/event-stream"):
            messages = _sse_messages(response.body)
        else:
            try:
                messages = json.loads(response.body.decode("utf-8"))
            except ValueError as e:
                raise McpError("%s answered %s with something that is not JSON" % (
                    self.url, method), status=response.status, body=response.body) from e
            messages = messages if isinstance(messages, list) else [messages]
        for reply in messages:
            if isinstance(reply, dict) and reply.get("id") == message["id"] and (
                    "result" in reply or "error" in reply):
                if "error" in reply:
                    error = reply["error"] or {}
                    raise McpError("%s failed: %s" % (method, error.get("message")),
                                   code=error.get("code"), data=error.get("data"))
                return reply["result"]
        raise McpError("%s gave no answer to %s" % (self.url, method), status=response.status,
                       body=response.body)

    def notify(self, method, params=None):
        """Sends a JSON-RPC notification (no answer expected)."""
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._check(self._http("POST", message))

    def initialize(self, client_name):
        result = self.request("initialize", {
            "protocolVersion": self.protocol_version,
            "capabilities": {},
            "clientInfo": {"name": client_name, "version": "1.0"},
        })
        self.protocol_version = result.get("protocolVersion", self.protocol_version)
        self.server_info = result.get("serverInfo")
        self.capabilities = result.get("capabilities")
        self.notify("notifications/initialized")
        return result

    # --- MCP ---------------------------------------------------------------------------------
    def ping(self):
        return self.request("ping")

    def list_tools(self):
        """Every tool the server offers (follows pagination)."""
        tools, cursor = [], None
        while True:
            result = self.request("tools/list", {"cursor": cursor} if cursor else None)
            tools += result.get("tools", [])
            cursor = result.get("nextCursor")
            if not cursor:
                return tools

    def call_tool(self, name, arguments=None):
        """The tool's CallToolResult (content, structuredContent, isError)."""
        return self.request("tools/call", {"name": name, "arguments": arguments or {}})

    def close(self):
        """Ends the MCP session on the server (best effort) and closes the connection."""
        if self.session_id:
            try:
                self._http("DELETE")
            except (McpError, OSError):
                pass
            self.session_id = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def connect(url, *, proxy_socket=None, timeout=60.0, client_name="sandbox-mcp-python",
            protocol_version=LATEST_PROTOCOL_VERSION):
    """Connects to the MCP server at ``url`` and initializes a session.

    proxy_socket: the sidecar's socket; by default ``$MCP_PROXY_SOCKET``. Pass "" to connect
    directly over TCP (outside a sandbox, e.g. for comparison).
    """
    if proxy_socket is None:
        proxy_socket = os.environ.get("MCP_PROXY_SOCKET")
        if not proxy_socket:
            raise McpError(
                "MCP_PROXY_SOCKET is not set: this sandbox session has no MCP allowlist. Create "
                "the session with mcp_allowlist=[\"%s\"] (a run_code/run_shell argument) to "
                "reach that MCP server." % url)
    client = Client(url, proxy_socket, timeout, protocol_version)
    client.initialize(client_name)
    return client
