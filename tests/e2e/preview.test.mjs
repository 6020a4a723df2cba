// Preview URLs end to end, with the official MCP client, the real server, dockerd, runsc and a
// real browser (Debian's chromium, headless, driven by puppeteer-core): sandbox code serves a
// page on a port inside the sandbox, expose_port hands out a URL, and the browser loads it
// through the preview listener and the agent (the sandbox keeps network "none"): the page shows
// a matplotlib PNG the session made, gets its WebSocket echo and an SSE event. Then what a user
// relies on: keep-alive, a frozen session thawed by the first request, a 502 that says nothing
// listens, links that end (unexpose, expiry, cleanup), and the MCP endpoint refusing preview
// origins.
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { withPage, screenshotDir } from './browser.mjs';
import { connectHttp, sandboxContainerId, dockerGet, startHttpServer, stopServer, waitFor } from './harness.mjs';
import { call } from './flow.mjs';
import { PLOT_SIZE, PREVIEW_SERVER_JS, plotPython, previewStatuses } from './preview_site.mjs';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-preview-'));
let server;
let client;

before(async () => {
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({
    instance_id: `e2e-preview-${Math.random().toString(16).slice(2, 10)}`,
    pool: { size: 0 },
    sessions: { freeze_after_idle_s: 1, pause_after_idle_s: 0 },
    preview: { listen: '127.0.0.1:0', idle_timeout_s: 30 },
  }));
  server = await startHttpServer(['--config', file]);
  ({ client } = await connectHttp(server.url));
});

after(async () => {
  await client?.close();
  if (server) await stopServer(server);
  rmSync(dir, { recursive: true, force: true });
});

async function ok(name, args) {
  const res = await call(client, name, args);
  assert.equal(res.isError, false, `${name}: ${JSON.stringify(res.content ?? res)}`);
  return res.structuredContent;
}

async function newSession() {
  return (await ok('run_code', { code: '1' })).session_id;
}

// Starts a server in the session with `command` (in the background) and waits until `port`
// answers inside the sandbox.
async function serve(sessionId, command, port) {
  await ok('run_shell', { session_id: sessionId, command: `cd /tmp && (nohup ${command} >/tmp/server-${port}.log 2>&1 &)` });
  const probe = `for i in $(seq 100); do python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 0.2)" 2>/dev/null && exit 0; sleep 0.1; done; cat /tmp/server-${port}.log; exit 1`;
  const res = await call(client, 'run_shell', { session_id: sessionId, command: probe });
  assert.equal(res.structuredContent?.exit_code, 0, `the server on ${port} did not start: ${JSON.stringify(res.structuredContent)}`);
}

// A GET through the preview listener the way a browser resolves <label>.localhost: to loopback,
// with the URL's host in Host. `agent`: reuse connections (keep-alive).
function get(url, { agent, headers = {}, method = 'GET' } = {}) {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port: target.port, path: target.pathname + target.search, method, agent,
      headers: { host: target.host, ...headers },
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body, socket: res.socket }));
    });
    req.on('error', reject);
    req.end();
  });
}

const URL_SHAPE = /^http:\/\/([0-9a-f]{32})\.localhost:(\d+)\/$/;

test('a browser loads what the sandbox serves: a matplotlib PNG, a WebSocket echo and SSE', async () => {
  const sid = await newSession();
  await ok('run_code', { session_id: sid, code: plotPython('/tmp/plot.png') });
  await ok('upload_file', {
    session_id: sid, path: '/tmp/server.cjs', content: PREVIEW_SERVER_JS,
  });
  await serve(sid, 'node /tmp/server.cjs 8000 /tmp/plot.png', 8000);
  const exposed = await ok('expose_port', { session_id: sid, port: 8000 });
  assert.match(exposed.url, URL_SHAPE);
  assert.equal(exposed.port, 8000);
  assert.ok(exposed.expires_in_s > 0);

  const statuses = await withPage(async (page) => {
    const response = await page.goto(exposed.url, { waitUntil: 'load' });
    assert.equal(response.status(), 200);
    const seen = await previewStatuses(page);
    // A page from the sandbox must not reach the MCP endpoint with the user's browser.
    const mcp = await page.evaluate(async (mcpUrl) => {
      try {
        const res = await fetch(mcpUrl, {
          method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
        return `status ${res.status}`;
      } catch (err) {
        return `blocked: ${err.message}`;
      }
    }, server.url);
    assert.doesNotMatch(mcp, /status 200/, 'the MCP endpoint answered a preview page');
    await page.screenshot({ path: path.join(screenshotDir(), 'preview-browser.png') });
    return seen;
  });
  assert.equal(statuses.plot, `loaded ${PLOT_SIZE.width}x${PLOT_SIZE.height}`);
  assert.match(statuses.ws, /^echo: ping-/);
  assert.equal(statuses.sse, 'tick 1');

  const listed = await ok('get_session_stats', { session_id: sid });
  assert.deepEqual(listed.previews.map((p) => [p.port, p.url]), [[8000, exposed.url]]);
  const sessions = await ok('list_sessions', {});
  assert.deepEqual(sessions.sessions.find((s) => s.session_id === sid).previews.map((p) => p.url), [exposed.url]);

  // No interface, route or published port was added: the sandbox still has network "none".
  const { body: inspect } = await dockerGet(`/containers/${await sandboxContainerId(client, sid)}/json`);
  assert.equal(inspect.HostConfig.NetworkMode, 'none');
  assert.deepEqual(Object.keys(inspect.NetworkSettings.Ports ?? {}), []);
  await ok('cleanup_session', { session_id: sid });
});

test('keep-alive, a frozen session thawed by the first request, and a 502 that says nothing listens', async () => {
  const sid = await newSession();
  await ok('run_shell', { session_id: sid, command: 'mkdir -p /tmp/site && echo hello-from-the-sandbox > /tmp/site/index.html' });
  await serve(sid, 'python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/site', 8000);
  const { url } = await ok('expose_port', { session_id: sid, port: 8000 });
  // Exposing again keeps the URL.
  assert.equal((await ok('expose_port', { session_id: sid, port: 8000, expires_s: 600 })).url, url);

  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const first = await get(url, { agent, headers: { connection: 'keep-alive' } });
    // python's http.server speaks HTTP/1.0 unless told otherwise: ask it for the file twice and
    // check the body; keep-alive is the proxy's to carry when the server offers it.
    assert.equal(first.status, 200);
    assert.equal(first.body.trim(), 'hello-from-the-sandbox');
  } finally {
    agent.destroy();
  }

  await waitFor(async () => (await ok('get_session_stats', { session_id: sid })).state === 'frozen', 20000,
    'the session to be frozen');
  const thawed = await get(url);
  assert.equal(thawed.status, 200);
  assert.equal(thawed.body.trim(), 'hello-from-the-sandbox');

  const nothing = await ok('expose_port', { session_id: sid, port: 8001 });
  const refused = await get(nothing.url);
  assert.equal(refused.status, 502);
  assert.match(refused.body, /nothing listens on 127\.0\.0\.1:8001/);
  await ok('cleanup_session', { session_id: sid });
});

test('a Node server keeps its connection alive through the preview', async () => {
  const sid = await newSession();
  await ok('upload_file', {
    session_id: sid, path: '/tmp/ka.cjs',
    content: "require('http').createServer((q, s) => s.end('port=' + q.socket.remotePort)).listen(8000, '127.0.0.1');",
  });
  await serve(sid, 'node /tmp/ka.cjs', 8000);
  const { url } = await ok('expose_port', { session_id: sid, port: 8000 });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const a = await get(url, { agent });
    const b = await get(url, { agent });
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    // One connection inside the sandbox carried both requests.
    assert.equal(a.body, b.body, 'the two requests came from one client port in the sandbox');
    assert.equal(a.socket, b.socket, 'the browser side reused its connection');
  } finally {
    agent.destroy();
  }
  await ok('cleanup_session', { session_id: sid });
});

test('links end: unexpose, expiry and cleanup give 404, and expose_port checks its arguments', async () => {
  const sid = await newSession();
  await ok('run_shell', { session_id: sid, command: 'mkdir -p /tmp/site && echo up > /tmp/site/index.html' });
  await serve(sid, 'python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/site', 8000);
  const kept = await ok('expose_port', { session_id: sid, port: 8000 });
  assert.equal((await get(kept.url)).status, 200);

  await ok('unexpose_port', { session_id: sid, port: 8000 });
  const gone = await get(kept.url);
  assert.equal(gone.status, 404);
  assert.match(gone.body, /unknown or has expired/);
  const again = await call(client, 'unexpose_port', { session_id: sid, port: 8000 });
  assert.equal(again.isError, true);

  const short = await ok('expose_port', { session_id: sid, port: 8000, expires_s: 1 });
  assert.notEqual(short.url, kept.url, 'a new exposure gets a new label');
  assert.equal((await get(short.url)).status, 200);
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal((await get(short.url)).status, 404);

  const tooLong = await call(client, 'expose_port', { session_id: sid, port: 8000, expires_s: 10 ** 7 });
  assert.equal(tooLong.isError, true);
  const badPort = await call(client, 'expose_port', { session_id: sid, port: 70000 });
  assert.equal(badPort.isError, true);

  const last = await ok('expose_port', { session_id: sid, port: 8000 });
  await ok('cleanup_session', { session_id: sid });
  assert.equal((await get(last.url)).status, 404);

  // The MCP endpoint refuses a request that names a preview host, whatever its token.
  const label = URL_SHAPE.exec(last.url)[1];
  const mcp = new URL(server.url);
  const res = await get(server.url, {
    method: 'POST',
    headers: { origin: `http://${label}.localhost:${URL_SHAPE.exec(last.url)[2]}`, host: mcp.host },
  });
  assert.equal(res.status, 403);
  assert.match(res.body, /preview/);
});

test('with preview.require_login a browser needs the one-time login link; a paused session is restored by the first request', async () => {
  const file = path.join(dir, 'login.json');
  writeFileSync(file, JSON.stringify({
    instance_id: `e2e-preview-login-${Math.random().toString(16).slice(2, 10)}`,
    pool: { size: 0 },
    sessions: { freeze_after_idle_s: 0, pause_after_idle_s: 2, snapshot_dir: path.join(dir, 'snapshots') },
    preview: { listen: '127.0.0.1:0', require_login: true },
  }));
  const loginServer = await startHttpServer(['--config', file]);
  const { client: own } = await connectHttp(loginServer.url);
  try {
    const sid = (await own.callTool({ name: 'run_code', arguments: { code: '1' } })).structuredContent.session_id;
    await own.callTool({ name: 'run_shell', arguments: { session_id: sid, command: 'mkdir -p /tmp/site && echo private-page > /tmp/site/index.html && (nohup python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/site >/dev/null 2>&1 &) && sleep 1' } });
    const exposed = (await own.callTool({ name: 'expose_port', arguments: { session_id: sid, port: 8000 } })).structuredContent;
    assert.match(exposed.login_url, /\/\.sandbox-mcp\/login\?code=[0-9a-f]{32}$/);
    assert.ok(exposed.login_url.startsWith(exposed.url.slice(0, -1)), 'the login link is on the preview host');

    // The link alone is not enough.
    const bare = await get(exposed.url);
    assert.equal(bare.status, 401);
    assert.match(bare.body, /login_url/);

    await waitFor(async () => (await own.callTool({ name: 'get_session_stats', arguments: { session_id: sid } })).structuredContent.state === 'paused',
      30000, 'the session to be paused');

    await withPage(async (page) => {
      // The login link sets the cookie and lands on the page: the paused session is restored by
      // this first request (which waits), and the server it ran serves again.
      const response = await page.goto(exposed.login_url, { waitUntil: 'load' });
      assert.equal(response.status(), 200);
      assert.equal((await page.evaluate(() => document.body.innerText)).trim(), 'private-page');
      assert.equal(new URL(page.url()).pathname, '/');
      // HttpOnly: the page's own script cannot read it.
      assert.equal(await page.evaluate(() => document.cookie), '');
      // A second use of the link is refused; the cookie keeps working.
      const again = await page.goto(exposed.login_url);
      assert.equal(again.status(), 401);
      assert.ok([200, 304].includes((await page.goto(exposed.url)).status()), 'the cookie keeps working');
    });
    // The cookie never reaches the sandbox: the server there logs what it received.
    const echo = 'import http.server\nclass H(http.server.BaseHTTPRequestHandler):\n    protocol_version = "HTTP/1.1"\n    def do_GET(self):\n        body = repr(self.headers.get_all("Cookie")).encode()\n        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)\nhttp.server.HTTPServer(("127.0.0.1", 8002), H).serve_forever()\n';
    await own.callTool({ name: 'upload_file', arguments: { session_id: sid, path: '/tmp/echo.py', content: echo } });
    await own.callTool({ name: 'run_shell', arguments: { session_id: sid, command: '(nohup python3 /tmp/echo.py >/dev/null 2>&1 &) && sleep 1' } });
    const echoExposed = (await own.callTool({ name: 'expose_port', arguments: { session_id: sid, port: 8002 } })).structuredContent;
    const login = await get(echoExposed.login_url);
    assert.equal(login.status, 303);
    const cookie = login.headers['set-cookie'][0].split(';')[0];
    assert.match(login.headers['set-cookie'][0], /HttpOnly/);
    // Two requests on one kept-alive connection: the cookie is taken out of each.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let i = 0; i < 2; i++) {
        const seen = await get(echoExposed.url, { agent, headers: { cookie: `theme=dark; ${cookie}; lang=en` } });
        assert.equal(seen.status, 200);
        assert.equal(seen.body, "['theme=dark; lang=en']");
      }
    } finally {
      agent.destroy();
    }
    // A cookie of another exposure does not open this one.
    const other = await get(exposed.url, { headers: { cookie } });
    assert.equal(other.status, 401);
  } finally {
    await own.close();
    await stopServer(loginServer);
  }
});
