// A fleet, end to end: two replicas, each on its own engine (A on the local dockerd over its Unix
// socket, B on the TLS-only second dockerd of scripts/tls_dockerd.sh over tcp:// with client
// certificates), behind haproxy running deploy/haproxy.cfg as it is, and 16 official-SDK clients
// connecting through the front only. Everything on loopback.
//
//  0. the front itself refuses requests without the bearer token;
//  1. sessions are balanced and sticky: each stays on its replica, and its state persists; each
//     session id names its replica, which is all the front routes by;
//  1a. 2026-07-28 clients (no MCP session): requests without a handle are balanced, a call naming
//     a sandbox session reaches the replica its id names (Mcp-Param-Session-Id), and a header
//     that disagrees with the body is refused; tasks and sandbox files are routed by Mcp-Name;
//  1b. attack: churning sessions (initialize + DELETE, hundreds of times) leaves the front no
//     table to fill, and a restarted front still routes every earlier session to its replica;
//  2. a killed replica's clients get a clean "session not found" and recover by initializing
//     again (on the live replica); the replica restarted with its instance id serves again and
//     removes what its earlier run left on its engine;
//  3. a draining replica gets no new session, even before the front's health check saw it drain
//     (its 503 to initialize is retried on the other replica), while its running execution
//     finishes through the front; it exits 0;
//  4. no container of either replica is left on either engine.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client as ClientV2, StreamableHTTPClientTransport as StreamableHTTPClientTransportV2 } from '@modelcontextprotocol/client';
import { fileURLToPath } from 'node:url';
import {
  SERVER_BIN, connectHttp, containersOfInstance, dockerExec, dockerRequest, getEndpoint,
  sandboxContainerId, startHttpServer, stopServer, waitFor, waitForFilePython,
} from './harness.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TLS_HOST = process.env.SANDBOX_TLS_ENGINE_HOST;
const TLS_CERTS = process.env.SANDBOX_TLS_ENGINE_CERTS;
const TLS_SOCKET = process.env.SANDBOX_TLS_ENGINE_SOCKET;
const TOKEN = `fleet-${Math.random().toString(36).slice(2)}-${Date.now()}`;
const AUTH = { Authorization: `Bearer ${TOKEN}` };
const CLIENTS = 16;

const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-fleet-'));
const replicas = {}; // name -> { server, instanceId, port, config }
let front; // { process, url, log }
const clients = []; // { conn, sid, value, replica }
let bUpBeforeKill = 0; // how often the front had logged b UP when test 2 killed it
let planted; // a container made to look like B's leftover (test 2), removed in after() if still there

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

// The TLS engine's API over its private Unix socket (the test's view of "the remote engine").
function tlsEngine(method, apiPath, body) {
  return dockerRequest(method, apiPath, body, TLS_SOCKET);
}

async function tlsEngineContainers(instanceId) {
  const filters = encodeURIComponent(JSON.stringify({ label: [`sandbox-mcp.instance=${instanceId}`] }));
  const { status, body } = await tlsEngine('GET', `/containers/json?all=1&filters=${filters}`);
  assert.equal(status, 200, JSON.stringify(body));
  return body;
}

// How often the front logged replica `name` coming UP (after being DOWN) or going DOWN.
function frontSaw(name, state) {
  return front.log().split('\n').filter((l) => l.startsWith(`Server replicas/${name} is ${state},`)).length;
}

// Starts run_code `code` in sandbox session `sessionId` and resolves once its output began (it
// is running), to { result }: the call's promise (wrapped, or awaiting this would wait for it).
async function startRunning(client, code, sessionId) {
  let begun;
  const running = new Promise((r) => { begun = r; });
  const result = client.callTool({ name: 'run_code', arguments: { code, session_id: sessionId, timeout: 90 } },
    undefined, { onprogress: () => begun(), timeout: 120000 });
  result.catch(() => {}); // observed later; not an unhandled rejection meanwhile
  await running;
  return { result };
}

async function startReplica(name, docker) {
  const instanceId = `fleet.${name}.${process.pid}`;  // a "." is literal in the front's routes
  const port = replicas[name]?.port ?? await freePort();
  const config = {
    instance_id: instanceId,
    pool: { size: 1, preload_python: [] },
    shutdown: { grace_s: 60 },
    ...(docker ? { docker } : {}),
  };
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(config));
  writeFileSync(path.join(dir, `${name}.token`), `${TOKEN}\n`);
  // A fixed port, kept across a restart: the front names it.
  const server = await startHttpServer(['--config', file, '--token-file', path.join(dir, `${name}.token`)],
    {}, `127.0.0.1:${port}`);
  replicas[name] = { server, instanceId, port, name };
  return replicas[name];
}

// The front: deploy/haproxy.cfg as it is, plus (a second file) an admin socket the test asks
// what haproxy holds. On `port` when given (a restart keeps the clients' address).
async function startFront(port) {
  port ??= await freePort();
  const statsSocket = path.join(dir, 'front.sock');
  const statsConfig = path.join(dir, 'front-stats.cfg');
  writeFileSync(statsConfig, `global\n  stats socket ${statsSocket} mode 600 level admin\n`);
  const env = {
    ...process.env,
    SANDBOX_FRONT_BIND: `127.0.0.1:${port}`,
    SANDBOX_REPLICA_A: `127.0.0.1:${replicas.a.port}`,
    SANDBOX_REPLICA_A_ID: replicas.a.instanceId,
    SANDBOX_REPLICA_B: `127.0.0.1:${replicas.b.port}`,
    SANDBOX_REPLICA_B_ID: replicas.b.instanceId,
    SANDBOX_MCP_TOKEN: TOKEN,
  };
  const child = spawn('haproxy', ['-db', '-f', path.join(REPO, 'deploy/haproxy.cfg'), '-f', statsConfig],
    { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (c) => { log += c; });
  await new Promise((resolve, reject) => {
    child.on('error', (e) => reject(new Error(`haproxy did not start (is it installed? scripts/setup.sh installs it): ${e.message}`)));
    child.on('exit', (code) => reject(new Error(`haproxy exited with ${code}:\n${log}`)));
    waitFor(async () => (await fetch(`http://127.0.0.1:${port}/mcp`).catch(() => null))?.status === 401, 10000,
      'the front to answer').then(resolve, reject);
  });
  front = { process: child, port, url: `http://127.0.0.1:${port}/mcp`, log: () => log, statsSocket };
  return front;
}

async function stopFront() {
  const child = front.process;
  child.kill('SIGTERM');
  await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.on('exit', r)));
}

// One command on the front's admin socket; its answer.
function askFront(command) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(front.statsSocket, () => socket.end(`${command}\n`));
    let text = '';
    socket.on('data', (c) => { text += c; });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

// The replica holding MCP session `sessionId`: the one whose /metrics counts it is not enough
// (counts only), so ask each replica directly with the session id: only its own knows it.
async function replicaOf(sessionId) {
  for (const replica of Object.values(replicas)) {
    if (replica.server.exitCode !== null) continue;
    const res = await fetch(replica.server.url, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    if (res.status === 200) return replica.name;
  }
  return null;
}

async function runCode(client, code, sessionId) {
  const res = await client.callTool({ name: 'run_code', arguments: { code, ...(sessionId ? { session_id: sessionId } : {}) } },
    undefined, { timeout: 120000 });
  assert.equal(res.isError, false, JSON.stringify(res));
  return res.structuredContent;
}

async function mcpSessions(replica) {
  const { text } = await getEndpoint(replica.server.url, '/metrics', AUTH);
  const line = text.split('\n').find((l) => l.startsWith('sandbox_mcp_mcp_sessions '));
  return Number(line.split(' ')[1]);
}

before(async () => {
  assert.ok(TLS_HOST && TLS_CERTS && TLS_SOCKET,
    'no TLS engine: run `scripts/tls_dockerd.sh start && eval "$(scripts/tls_dockerd.sh env)"` (scripts/test.sh does)');
  assert.ok(SERVER_BIN);
  await startReplica('a');
  await startReplica('b', {
    host: TLS_HOST,
    tls: { ca_file: `${TLS_CERTS}/ca.pem`, cert_file: `${TLS_CERTS}/client.pem`, key_file: `${TLS_CERTS}/client-key.pem` },
  });
  await startFront();
  // Both replicas ready and seen as UP by the front (health checks every 500 ms, rise 2).
  for (const replica of Object.values(replicas)) {
    await waitFor(async () => (await getEndpoint(replica.server.url, '/readyz', AUTH)).status === 200, 60000,
      `replica ${replica.name} to be ready`);
  }
  await new Promise((r) => setTimeout(r, 1500));
});

after(async () => {
  for (const c of clients) await c.conn?.client.close().catch(() => {});
  if (planted) await tlsEngine('DELETE', `/containers/${planted}?force=1`).catch(() => {});
  for (const replica of Object.values(replicas)) {
    if (replica.server.exitCode === null) await stopServer(replica.server);
  }
  if (front) await stopFront();
  rmSync(dir, { recursive: true, force: true });
});

test('the front refuses requests without the bearer token, before any replica sees them', async () => {
  const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  for (const extra of [{}, { Authorization: 'Bearer wrong' }, { Authorization: `Bearer ${TOKEN}x` },
    { Authorization: TOKEN }]) {
    const res = await fetch(front.url, { method: 'POST', headers: { ...headers, ...extra }, body: initialize });
    assert.equal(res.status, 401, JSON.stringify(extra));
    assert.equal(res.headers.get('www-authenticate'), 'Bearer');
    // haproxy's own answer (a replica's 401 words it differently): the request went no further.
    assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: null,
      error: { code: -32000, message: 'Unauthorized: send Authorization: Bearer <token>' } });
  }
  assert.equal(await mcpSessions(replicas.a) + await mcpSessions(replicas.b), 0);
});

test('16 clients through the front: sessions spread over both replicas, stay there, keep state', async () => {
  for (let i = 0; i < CLIENTS; i++) {
    const conn = await connectHttp(front.url, AUTH);
    const first = await runCode(conn.client, `x = ${i}\nx`);
    assert.equal(first.result, String(i));
    const sid = conn.transport.sessionId;
    clients.push({ conn, sid, sandbox: first.session_id, value: i, replica: await replicaOf(sid) });
  }
  for (const c of clients) {
    assert.match(c.sid, /^[0-9a-f]{32}~/, 'a session id: 128 random bits, then its replica');
    assert.ok(c.sid.endsWith(`~${replicas[c.replica]?.instanceId}`), `${c.sid} names its replica ${c.replica}`);
  }
  const onA = clients.filter((c) => c.replica === 'a').length;
  const onB = clients.filter((c) => c.replica === 'b').length;
  assert.equal(onA + onB, CLIENTS, `every session lives on a replica: ${JSON.stringify(clients.map((c) => c.replica))}`);
  assert.ok(onA >= 4 && onB >= 4, `balanced across replicas: ${onA} on a, ${onB} on b`);
  assert.equal(await mcpSessions(replicas.a), onA);
  assert.equal(await mcpSessions(replicas.b), onB);

  for (let round = 1; round <= 3; round++) {
    await Promise.all(clients.map(async (c) => {
      const out = await runCode(c.conn.client, `x += 100\nx`, c.sandbox);
      c.value += 100;
      assert.equal(out.result, String(c.value), 'the sandbox kept its state: every call reached its replica');
    }));
  }
  // Sandboxes live on their replica's engine, labelled with its instance id.
  const localIds = new Set((await containersOfInstance(replicas.a.instanceId)).map((c) => c.Id));
  const remoteIds = new Set((await tlsEngineContainers(replicas.b.instanceId)).map((c) => c.Id));
  for (const c of clients) {
    const stats = await c.conn.client.callTool({ name: 'get_session_stats', arguments: { session_id: c.sandbox } });
    const id = stats.structuredContent.container_id;
    assert.ok((c.replica === 'a' ? localIds : remoteIds).has(id), `session on ${c.replica} runs on its engine`);
  }
});

// MCP 2026-07-28 through the same front: no MCP session to be sticky on. A request without a
// handle is balanced; one naming a sandbox session carries its id in Mcp-Param-Session-Id (the
// v2 client mirrors the x-mcp-header argument), and the front sends it to the replica the id
// names. A header that disagrees with the body never reaches a sandbox: the replica refuses it.
test('2026-07-28 clients through the front: sandboxes by handle stay on the replica the handle names', async () => {
  const modern = [];
  try {
    for (let i = 0; i < 8; i++) {
      const client = new ClientV2({ name: `fleet-v2-${i}`, version: '1.0.0' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await client.connect(new StreamableHTTPClientTransportV2(new URL(front.url), { requestInit: { headers: AUTH } }));
      await client.listTools(); // the client learns which arguments it mirrors as headers
      const first = await runCode(client, `y = ${i}\ny`);
      const replica = Object.values(replicas).find((r) => first.session_id.endsWith(`~${r.instanceId}`));
      assert.ok(replica, `${first.session_id} names a replica`);
      modern.push({ client, sandbox: first.session_id, value: i, replica: replica.name });
    }
    const onA = modern.filter((m) => m.replica === 'a').length;
    assert.ok(onA >= 2 && onA <= 6, `new sandboxes are balanced: ${onA} of 8 on a`);
    for (let round = 1; round <= 2; round++) {
      await Promise.all(modern.map(async (m) => {
        const out = await runCode(m.client, 'y += 10\ny', m.sandbox);
        m.value += 10;
        assert.equal(out.result, String(m.value), 'the handle led the call to its replica');
      }));
    }
    // A forged header naming the other replica: refused before any sandbox runs it.
    const victim = modern[0];
    const other = Object.values(replicas).find((r) => r.name !== victim.replica);
    const res = await fetch(front.url, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'run_code',
        'mcp-param-session-id': `s-0~${other.instanceId}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'forged', method: 'tools/call', params: {
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
        name: 'run_code', arguments: { code: 'y = -1', session_id: victim.sandbox } } }),
    });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.code, -32020);
    assert.equal((await runCode(victim.client, 'y', victim.sandbox)).result, String(victim.value));

    // What else a replica holds is named in Mcp-Name, and the front routes by it too: a task
    // (tasks extension) on every sandbox's replica, polled through the front, and a sandbox's file.
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
    const viaFront = async (method, name, params, more = {}) => {
      const res = await fetch(front.url, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28', 'mcp-method': method, 'mcp-name': name, ...more },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { _meta: meta, ...params } }),
      });
      assert.equal(res.status, 200, `${method} ${name}`);
      return (await res.json()).result;
    };
    for (const replica of ['a', 'b']) {
      const m = modern.find((c) => c.replica === replica);
      const task = await viaFront('tools/call', 'run_code',
        { name: 'run_code', arguments: { code: 'import time\ntime.sleep(2)\ny * 2', session_id: m.sandbox } },
        { 'mcp-param-session-id': m.sandbox });
      assert.equal(task.resultType, 'task', JSON.stringify(task));
      assert.ok(task.taskId.endsWith(`~${replicas[replica].instanceId}`), `${task.taskId} names its replica`);
      let polled = await viaFront('tasks/get', task.taskId, { taskId: task.taskId });
      while (polled.status === 'working') {
        await new Promise((r) => setTimeout(r, 250));
        polled = await viaFront('tasks/get', task.taskId, { taskId: task.taskId });
      }
      assert.equal(polled.result?.structuredContent?.result, String(m.value * 2), JSON.stringify(polled));
      await runCode(m.client, 'open("/tmp/where", "w").write("' + replica + '")', m.sandbox);
      const uri = `sandbox://${m.sandbox}/tmp/where`;
      const read = await viaFront('resources/read', uri, { uri });
      assert.equal(read.contents[0].text, replica);
    }
    for (const m of modern) {
      const end = await m.client.callTool({ name: 'cleanup_session', arguments: { session_id: m.sandbox } });
      assert.equal(end.isError, false, JSON.stringify(end));
    }
  } finally {
    for (const m of modern) await m.client.close().catch(() => {});
  }
});

test('attack: initialize + DELETE churn leaves the front nothing to evict; a restarted front routes every session home', async () => {
  // A token holder opens and ends sessions as fast as it can. A front that learns sessions into a
  // table keeps each entry past its DELETE (for hours): churn fills the table and pushes other
  // clients' entries out, and a restart of the front forgets them all.
  const headers = { ...AUTH, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'churn', version: '1' } } });
  const CHURN = 300;
  const started = Date.now();
  for (let i = 0; i < CHURN; i += 10) {
    await Promise.all(Array.from({ length: 10 }, async () => {
      const res = await fetch(front.url, { method: 'POST', headers, body: initialize });
      assert.equal(res.status, 200);
      await res.text();
      const sid = res.headers.get('mcp-session-id');
      const end = await fetch(front.url, { method: 'DELETE', headers: { ...AUTH, 'mcp-session-id': sid } });
      assert.ok(end.status < 300, `DELETE through the front: ${end.status}`);
    }));
  }
  console.log(`# ${CHURN} initialize + DELETE cycles through the front in ${Date.now() - started} ms`);
  const tables = await askFront('show table');
  assert.doesNotMatch(tables, /# table:/, `the front keeps a table:\n${tables}`);
  assert.equal(await mcpSessions(replicas.a) + await mcpSessions(replicas.b), CLIENTS, 'the churned sessions ended');

  // Every earlier session still reaches its replica, also through a front that forgot everything.
  await stopFront();
  await startFront(front.port);
  await Promise.all(clients.map(async (c) => {
    const out = await runCode(c.conn.client, 'x += 1\nx', c.sandbox);
    c.value += 1;
    assert.equal(out.result, String(c.value), `session on ${c.replica} reached its replica`);
  }));
});

test('a killed replica: its clients get "session not found" and recover by initializing again', async () => {
  const victims = clients.filter((c) => c.replica === 'b');
  bUpBeforeKill = frontSaw('b', 'UP');
  replicas.b.server.kill('SIGKILL');
  await new Promise((r) => (replicas.b.server.exitCode !== null ? r() : replicas.b.server.on('exit', r)));
  for (const c of victims) {
    await assert.rejects(runCode(c.conn.client, 'x', c.sandbox), (e) => /Session not found|404/.test(String(e.message ?? e)),
      'a clean session-not-found error');
    await c.conn.client.close().catch(() => {});
    c.conn = await connectHttp(front.url, AUTH); // the SDK's recovery: a new session
    const again = await runCode(c.conn.client, 'x = 7\nx');
    assert.equal(again.result, '7');
    c.value = 7;
    c.sandbox = again.session_id;
    c.replica = await replicaOf(c.conn.transport.sessionId);
    assert.equal(c.replica, 'a', 'the new session went to the live replica');
  }
  // Restarted with its instance id, B reaps what its killed run left on the remote engine. The
  // killed run's own sandboxes go by themselves (AutoRemove once their agents exit), so leave a
  // never-started container with B's labels, as an earlier run of B in another pid namespace
  // would: only B's reaping at start removes it (mcp_server/sandbox/docker/ownership.h).
  const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  const made = await tlsEngine('POST', '/containers/create', {
    Image: process.env.SANDBOX_TLS_ENGINE_IMAGE || 'sandbox-mcp/python:latest',
    Cmd: ['true'],
    Labels: {
      'sandbox-mcp.managed': '1', 'sandbox-mcp.instance': replicas.b.instanceId, 'sandbox-mcp.boot-id': bootId,
      'sandbox-mcp.pidns': 'pid:[1]', 'sandbox-mcp.pid': '999999', 'sandbox-mcp.pid-start': '1',
    },
    HostConfig: { NetworkMode: 'none', Runtime: 'runsc' },
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  planted = made.body.Id;
  assert.equal((await tlsEngine('GET', `/containers/${planted}/json`)).status, 200, 'the leftover is there');
  assert.ok((await tlsEngineContainers(replicas.b.instanceId)).some((c) => c.Id === planted));
  await startReplica('b', {
    host: TLS_HOST,
    tls: { ca_file: `${TLS_CERTS}/ca.pem`, cert_file: `${TLS_CERTS}/client.pem`, key_file: `${TLS_CERTS}/client-key.pem` },
  });
  await waitFor(async () => (await getEndpoint(replicas.b.server.url, '/readyz', AUTH)).status === 200, 60000, 'b ready again');
  await waitFor(async () => (await tlsEngine('GET', `/containers/${planted}/json`)).status === 404, 30000,
    'the restarted replica to remove its earlier run\'s leftover');
  planted = undefined;
  await waitFor(async () => (await tlsEngineContainers(replicas.b.instanceId)).length <= 1, 30000,
    'only the restarted replica\'s pooled sandbox on the TLS engine');
  assert.ok(front, 'the front keeps the same backend addresses');
});

test('a draining replica takes no new session while its running execution finishes', async (t) => {
  // The front must see B back (rise 2 x 500 ms) before A drains, or new sessions have nowhere to go.
  await waitFor(() => frontSaw('b', 'UP') > bUpBeforeKill, 15000, 'the front to see b up again');
  const release = []; // [container, engine socket]: touching /tmp/go there ends a held execution
  const letGo = async () => {
    while (release.length > 0) {
      const [container, socket] = release.shift();
      assert.equal(await dockerExec(container, ['touch', '/tmp/go'], socket), 0);
    }
  };
  try {
    // A running execution on A, held until the test lets it go.
    const draining = clients.find((c) => c.replica === 'a');
    release.push([await sandboxContainerId(draining.conn.client, draining.sandbox), undefined]);
    const { result: running } = await startRunning(draining.conn.client,
      `print("begin", flush=True)\n${waitForFilePython()}x = 99\nprint("end")`, draining.sandbox);

    // Two held on B, so that the front's leastconn prefers A (1 request running against 2) for
    // the next initialize for as long as it still counts A up.
    const busy = await connectHttp(front.url, AUTH); // A runs 1, B none: leastconn picks B
    assert.equal(await replicaOf(busy.transport.sessionId), 'b');
    const held = [];
    for (let i = 0; i < 2; i++) {
      const sandbox = (await runCode(busy.client, String(i))).session_id;
      release.push([await sandboxContainerId(busy.client, sandbox), TLS_SOCKET]);
      held.push((await startRunning(busy.client, `print("held", flush=True)\n${waitForFilePython()}`, sandbox)).result);
    }

    const aExit = new Promise((r) => replicas.a.server.on('exit', r));
    const aDownBefore = frontSaw('a', 'DOWN');
    const logAtDrain = front.log().length;
    replicas.a.server.kill('SIGTERM');
    await waitFor(async () => (await getEndpoint(replicas.a.server.url, '/readyz', AUTH)).status === 503, 5000, 'a draining');

    // At once, before the front's health checks (fall 2 x 500 ms) mark A down: each initialize
    // that reaches A gets 503 and is retried on B (retry-on 503); none fails, all land on B.
    const bBefore = await mcpSessions(replicas.b);
    const fresh = [];
    for (let i = 0; i < 4; i++) {
      const conn = await connectHttp(front.url, AUTH);
      fresh.push(conn);
      assert.equal((await runCode(conn.client, '2+2')).result, '4');
      assert.equal(await replicaOf(conn.transport.sessionId), 'b');
    }
    assert.equal(await mcpSessions(replicas.b), bBefore + 4, 'every new session went to b');
    for (const conn of fresh) await conn.client.close();
    // haproxy logs a redispatched request's retries as "+N" (none: A was down in the front
    // already, and this run did not exercise the retry).
    const retried = front.log().slice(logAtDrain).split('\n')
      .filter((l) => /replicas\/b .*\/\+\d+ \d+\/\d+ "POST /.test(l)).length;
    t.diagnostic(`${retried} request(s) answered 503 by a and retried on b`);

    // A's other sessions still reach A through the front once it counts A down (option persist).
    await waitFor(() => frontSaw('a', 'DOWN') > aDownBefore, 10000, 'the front to see a down');
    const other = clients.find((c) => c.replica === 'a' && c !== draining);
    assert.ok(other, 'a second session on a');
    assert.equal((await runCode(other.conn.client, 'x', other.sandbox)).result, String(other.value),
      'a session of the draining replica keeps its state through the front');

    await letGo();
    for (const result of held) assert.match((await result).structuredContent.stdout, /^held\ngo\n/);
    await busy.client.close();
    const result = await running;
    assert.equal(result.isError, false, JSON.stringify(result));
    assert.match(result.structuredContent.stdout, /begin\ngo\nend/, 'the running execution finished through the front');
    assert.equal(await aExit, 0, 'a exits 0 after its drain');
  } finally {
    await letGo().catch(() => {}); // after a failure: end the held executions, not their 60 s cap
  }
});

test('no container of either replica is left on either engine', async () => {
  for (const c of clients) await c.conn.client.close().catch(() => {});
  assert.equal(await stopServer(replicas.b.server), 0);
  await waitFor(async () => (await containersOfInstance(replicas.a.instanceId)).length === 0, 15000, 'a\'s containers gone');
  await waitFor(async () => (await tlsEngineContainers(replicas.b.instanceId)).length === 0, 15000, 'b\'s containers gone');
});
