// Attacks on preview URLs (expose_port and the preview listener), against the real server, runsc
// and two sessions of two clients, each serving its own name on port 8000. Must hold:
//  - a guessed, malformed, expired or ended label gets 404 and touches no sandbox (the refusal
//    counter moves, the failure counter does not, and neither sandbox's server sees a request);
//  - a connection is bound to the session its first request names: a later request naming the
//    other session's label on it still reaches the first (never the other);
//  - Host tricks (a look-alike suffix, a rebinding name, two Hosts, an absolute-form target) and
//    smuggling framing (Content-Length with Transfer-Encoding, a non-chunked coding) are refused
//    before any sandbox; an oversized head gets 431;
//  - a flood of idle connections is capped (preview.max_connections) and closed at the header
//    timeout, after which previews serve again; one session's connections cannot exceed
//    preview.max_connections_per_session nor take the other session's room;
//  - the MCP endpoint refuses requests that name a preview host;
//  - open connections close when their preview ends (unexpose_port, cleanup_session), and do not
//    keep a removed session's sandbox alive;
//  - the per-connection host sockets leave nothing behind, nor does anything else.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  assertNoLeaks, connectHttp, dockerGet, getEndpoint, snapshot, startHttpServer, stopServer, waitFor,
} from './attack_lib.mjs';

const dockerGetContainers = () => dockerGet(`/containers/json?filters=${encodeURIComponent(JSON.stringify({ label: ['sandbox-mcp.managed=1'] }))}`);

let dir;
let server;
let before_;
const clients = [];
const sites = {};  // name -> { client, sid, url, host, label }
const instanceId = `adv-preview-${Math.random().toString(16).slice(2, 10)}`;
let previewPort;

async function ok(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.equal(res.isError ?? false, false, `${name}: ${JSON.stringify(res.content)}`);
  return res.structuredContent;
}

// One raw exchange with the preview listener: sends `text`, returns everything it answers until
// it closes (or `ms` pass).
function raw(text, ms = 5000) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(previewPort, '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => { socket.destroy(); resolve(got); }, ms);
    socket.on('data', (chunk) => { got += chunk.toString('latin1'); });
    socket.on('close', () => { clearTimeout(timer); resolve(got); });
    socket.on('error', (err) => { clearTimeout(timer); err.code === 'ECONNRESET' ? resolve(got) : reject(err); });
    socket.write(text);
  });
}

const status = (answer) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);

async function counters() {
  const { text: body } = await getEndpoint(server.url, '/metrics');
  const read = (name) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(body)?.[1] ?? NaN);
  return { refused: read('sandbox_mcp_preview_refused_total'), failed: read('sandbox_mcp_preview_failed_total') };
}

// Requests each site's server saw (it appends one line per request).
async function seen(name) {
  const { client, sid } = sites[name];
  const res = await ok(client, 'run_shell', { session_id: sid, command: 'cat /tmp/requests 2>/dev/null | wc -l' });
  return Number(res.stdout.trim());
}

before(async () => {
  before_ = await snapshot();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'preview-attacks-'));
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({
    instance_id: instanceId,
    pool: { size: 0 },
    sessions: { freeze_after_idle_s: 0 },
    preview: {
      listen: '127.0.0.1:0', max_connections: 64, max_connections_per_session: 4,
      header_timeout_ms: 1000, max_head_bytes: 8192,
    },
  }));
  server = await startHttpServer(['--config', config]);
  for (const name of ['alpha', 'beta']) {
    const { client } = await connectHttp(server.url);
    clients.push(client);
    const sid = (await ok(client, 'run_code', { code: '1' })).session_id;
    await ok(client, 'upload_file', {
      session_id: sid, path: '/tmp/site.cjs',
      content: `require('http').createServer((q, s) => { let n = 0; q.on('data', (d) => { n += d.length; }); q.on('end', () => { require('fs').appendFileSync('/tmp/requests', q.url + ' ' + n + '\\n'); s.end('${name}'); }); }).listen(8000, '127.0.0.1');`,
    });
    await ok(client, 'run_shell', { session_id: sid, command: '(nohup node /tmp/site.cjs >/dev/null 2>&1 &); sleep 1' });
    const { url } = await ok(client, 'expose_port', { session_id: sid, port: 8000 });
    const target = new URL(url);
    previewPort = Number(target.port);
    sites[name] = { client, sid, url, host: target.host, label: target.hostname.split('.')[0] };
  }
  // Both serve: one request each through the preview.
  for (const name of ['alpha', 'beta']) {
    const answer = await raw(`GET /warm HTTP/1.1\r\nHost: ${sites[name].host}\r\nConnection: close\r\n\r\n`);
    assert.match(answer, new RegExp(`\\r\\n\\r\\n${name}$`), answer);
  }
});

after(async () => {
  for (const client of clients) await client.close().catch(() => {});
  if (server) await stopServer(server);
  fs.rmSync(dir, { recursive: true, force: true });
  if (before_) await assertNoLeaks(before_);
});

test('guessed, malformed and look-alike hosts get 404 and touch no sandbox', async () => {
  const start = await counters();
  const seenBefore = [await seen('alpha'), await seen('beta')];
  const guessed = 'f'.repeat(32);
  const hosts = [
    `${guessed}.localhost:${previewPort}`,                   // a guess
    `${sites.alpha.label.slice(0, 31)}.localhost:${previewPort}`,  // one digit short
    `${sites.alpha.label}.localhost.evil.example:${previewPort}`,  // a look-alike suffix
    `x.${sites.alpha.label}.localhost:${previewPort}`,      // a nested name
    `evil.example:${previewPort}`,                          // DNS rebinding onto the listener
    `localhost:${previewPort}`,
  ];
  for (const host of hosts) {
    const answer = await raw(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    assert.equal(status(answer), 404, `${host}: ${answer}`);
  }
  const end = await counters();
  assert.equal(end.refused - start.refused, hosts.length);
  assert.equal(end.failed, start.failed, 'no sandbox was asked to open anything');
  assert.deepEqual([await seen('alpha'), await seen('beta')], seenBefore);
});

test('Host and framing tricks are refused before any sandbox; an oversized head gets 431', async () => {
  const seenBefore = [await seen('alpha'), await seen('beta')];
  const host = sites.alpha.host;
  const cases = [
    [`GET / HTTP/1.1\r\nHost: ${host}\r\nHost: ${sites.beta.host}\r\n\r\n`, 400],
    [`GET http://${host}/ HTTP/1.1\r\nHost: ${host}\r\n\r\n`, 400],
    [`POST / HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, 400],
    [`POST / HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n`, 501],
    [`CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`, 405],
    [`GET / HTTP/1.1\r\nHost: ${host}\r\nX-Pad: ${'a'.repeat(9000)}\r\n\r\n`, 431],
    [`GET / HTTP/1.1\r\nHost: ${host}\r\nBad Header: x\r\n\r\n`, 400],
  ];
  for (const [request, expected] of cases) {
    const answer = await raw(request);
    assert.equal(status(answer), expected, `${JSON.stringify(request.slice(0, 80))}: ${answer.slice(0, 200)}`);
  }
  assert.deepEqual([await seen('alpha'), await seen('beta')], seenBefore);
});

test("every request on a connection is checked: another session's label on it ends the connection, never reaches the other", async () => {
  const alphaBefore = await seen('alpha');
  const betaBefore = await seen('beta');
  // What a front that reuses upstream connections across users would send: alpha's request, then
  // beta's on the same connection.
  const answer = await raw(
    `GET /one HTTP/1.1\r\nHost: ${sites.alpha.host}\r\n\r\n` +
    `GET /two HTTP/1.1\r\nHost: ${sites.beta.host}\r\nConnection: close\r\n\r\n`);
  const bodies = answer.split('\r\n\r\n').slice(1).map((b) => b.split('HTTP/1.1')[0]);
  assert.deepEqual(bodies, ['alpha'], answer);
  assert.equal(await seen('alpha'), alphaBefore + 1);
  assert.equal(await seen('beta'), betaBefore);

  // A page of one preview scripting another (its Origin names another label): 403, first request
  // or later.
  const cross = await raw(`GET / HTTP/1.1\r\nHost: ${sites.beta.host}\r\nOrigin: http://${sites.alpha.host}\r\nConnection: close\r\n\r\n`);
  assert.equal(status(cross), 403, cross);
  assert.equal(await seen('beta'), betaBefore);

  // Bodies go by their framing, re-chunked: a chunked upload of 3 MiB in odd pieces arrives whole
  // and is followed by the next request on the same connection.
  const piece = 'x'.repeat(1000003);
  const chunked = [piece, piece, piece].map((p) => `${p.length.toString(16)}\r\n${p}\r\n`).join('') + '0\r\n\r\n';
  const upload = await raw(
    `POST /upload HTTP/1.1\r\nHost: ${sites.alpha.host}\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}` +
    `GET /after HTTP/1.1\r\nHost: ${sites.alpha.host}\r\nConnection: close\r\n\r\n`, 15000);
  assert.deepEqual(upload.split('\r\n\r\n').slice(1).map((b) => b.split('HTTP/1.1')[0]), ['alpha', 'alpha'], upload.slice(0, 300));
  const { client, sid } = sites.alpha;
  const log = await ok(client, 'run_shell', { session_id: sid, command: 'tail -2 /tmp/requests' });
  assert.equal(log.stdout, '/upload 3000009\n/after 0\n');
});

test('connection floods are capped and cleared; one session cannot take the other\'s room', async () => {
  // Idle sockets that never send a head: past preview.max_connections they are refused (503),
  // and the header timeout closes the rest.
  const idle = [];
  const closed = [];
  for (let i = 0; i < 300; i++) {
    const socket = net.connect(previewPort, '127.0.0.1');
    socket.on('error', () => {});
    socket.resume();  // read (and drop) the 503 or 408, so the close is seen
    closed.push(new Promise((resolve) => socket.on('close', resolve)));
    idle.push(socket);
  }
  const allClosed = await Promise.race([Promise.all(closed).then(() => true),
    new Promise((r) => setTimeout(() => r(false), 10000))]);
  assert.ok(allClosed, 'idle connections were not all closed');

  // alpha holds its four connections (each relayed: a head sent, the answer not awaited).
  const held = [];
  for (let i = 0; i < 4; i++) {
    const socket = net.connect(previewPort, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(`GET /hold HTTP/1.1\r\nHost: ${sites.alpha.host}\r\n\r\n`);
    held.push(socket);
  }
  await waitFor(async () => (await seen('alpha')) > 0, 5000, 'the held connections to be relayed');
  await new Promise((r) => setTimeout(r, 500));
  const fifth = await raw(`GET / HTTP/1.1\r\nHost: ${sites.alpha.host}\r\nConnection: close\r\n\r\n`);
  assert.equal(status(fifth), 503, fifth);
  assert.match(fifth, /max_connections_per_session/);
  const other = await raw(`GET / HTTP/1.1\r\nHost: ${sites.beta.host}\r\nConnection: close\r\n\r\n`);
  assert.equal(status(other), 200, other);
  for (const socket of held) socket.destroy();
  await waitFor(async () => status(await raw(`GET / HTTP/1.1\r\nHost: ${sites.alpha.host}\r\nConnection: close\r\n\r\n`)) === 200,
    5000, 'alpha to serve again once its connections closed');
});

test('the MCP endpoint refuses requests naming a preview host, and no port socket is left behind', async () => {
  const mcp = new URL(server.url);
  for (const headers of [
    `Host: ${sites.alpha.host}\r\n`,
    `Host: ${mcp.host}\r\nOrigin: http://${sites.alpha.host}\r\n`,
  ]) {
    const answer = await new Promise((resolve, reject) => {
      const socket = net.connect(Number(mcp.port), '127.0.0.1');
      let got = '';
      socket.on('data', (c) => { got += c; });
      socket.on('close', () => resolve(got));
      socket.on('error', reject);
      socket.write(`POST ${mcp.pathname} HTTP/1.1\r\n${headers}Content-Type: application/json\r\n` +
        'Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}');
    });
    assert.equal(status(answer), 403, answer);
    assert.match(answer, /preview/);
  }
  // Each relayed connection had its own host socket in the session's channel directory; all gone.
  const root = `/run/sandbox-mcp/${instanceId}/c`;
  await waitFor(() => fs.readdirSync(root).every((name) =>
    fs.readdirSync(path.join(root, name)).every((file) => !file.startsWith('port-'))), 5000,
  'no port-*.sock left in the channel directories');
});

test('open connections end with their preview: unexpose_port and cleanup_session close them within seconds', async () => {
  const { client, sid } = sites.alpha;
  const hold = () => {
    const socket = net.connect(previewPort, '127.0.0.1');
    socket.on('error', () => {});
    socket.resume();
    const closed = new Promise((resolve) => socket.on('close', resolve));
    // A keep-alive request answered at once: the connection then stays open, idle.
    socket.write(`GET /kept HTTP/1.1\r\nHost: ${sites.alpha.host}\r\n\r\n`);
    return closed;
  };
  const within = (promise, ms) => Promise.race([promise.then(() => true), new Promise((r) => setTimeout(() => r(false), ms))]);
  const first = hold();
  assert.equal(await within(first, 1500), false, 'the kept connection closed by itself');
  await ok(client, 'unexpose_port', { session_id: sid, port: 8000 });
  assert.equal(await within(first, 5000), true, 'unexpose_port left a connection open');

  const { url } = await ok(client, 'expose_port', { session_id: sid, port: 8000 });
  sites.alpha.host = new URL(url).host;
  const second = hold();
  assert.equal(await within(second, 1500), false);
  const { body } = await dockerGetContainers();
  const before = body.length;
  await ok(client, 'cleanup_session', { session_id: sid });
  assert.equal(await within(second, 5000), true, 'cleanup_session left a connection open');
  // And the sandbox is gone, not kept by the connection.
  await waitFor(async () => (await dockerGetContainers()).body.length < before, 10000, 'the sandbox to be removed');
});
