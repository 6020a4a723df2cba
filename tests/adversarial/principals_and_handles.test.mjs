// Attacks on who owns a sandbox, with a tokens file naming two principals (alice, bob) and MCP
// 2026-07-28 clients, which hold sandboxes by handle (session_id) with no MCP session at all.
// Must hold:
//  - a principal cannot poll, cancel or answer another's task (tasks extension);
//  - a principal reaching another's handle finds nothing: not by 2026-07-28 requests, not from a
//    2025 MCP session, not through resources/read; and it cannot end it;
//  - another principal's 2025 MCP session does not exist for it (404), nor can it DELETE it;
//  - guessing handles starts no sandbox and finds none: a handle is 128 random bits, and an id
//    nobody was given is an error;
//  - a header that disagrees with the body (Mcp-Param-Session-Id, Mcp-Name) is refused before
//    anything runs, so a front routing by the header cannot be steered to another sandbox;
//  - a principal's quota holds across its 2025 MCP sessions and its stateless requests together.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  connectHttp, connectHttpV2, containersOfInstance, getEndpoint, startHttpServer, stopServer, waitFor,
} from './attack_lib.mjs';

const ALICE = randomBytes(24).toString('hex');
const BOB = randomBytes(24).toString('hex');
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

let dir;
let server;
let instanceId;
const open = []; // clients to close

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'principals-'));
  const tokens = path.join(dir, 'tokens.json');
  fs.writeFileSync(tokens, JSON.stringify({ principals: [
    { name: 'alice', token: ALICE, max_sessions: 2 },
    { name: 'bob', token: BOB },
  ] }), { mode: 0o600 });
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({
    pool: { size: 0 },
    sessions: { snapshot_dir: path.join(dir, 'snapshots'), max_snapshots_per_client: 2 },
  }));
  server = await startHttpServer(['--config', config, '--tokens-file', tokens]);
  instanceId = JSON.parse((await getEndpoint(server.url, '/readyz', auth(ALICE))).text).instance_id;
});

after(async () => {
  for (const client of open) await client.close().catch(() => {});
  if (server) await stopServer(server);
  fs.rmSync(dir, { recursive: true, force: true });
});

function auth(token) {
  return { Authorization: `Bearer ${token}` };
}

// A v2 client pinned to 2026-07-28, authenticated as `token`'s principal.
async function modernClient(token) {
  const client = await connectHttpV2(server.url, auth(token));
  open.push(client);
  return client;
}

// One raw 2026-07-28 request; its HTTP status and parsed body (the last SSE data line, if any).
async function raw(token, method, params, headers = {}) {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { ...auth(token), 'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { _meta: META, ...params } }),
  });
  const text = await res.text();
  const data = text.split('\n').filter((l) => l.startsWith('data: ')).pop();
  return { status: res.status, body: JSON.parse(data ? data.slice(6) : text) };
}

const errorText = (result) => result.content?.[0]?.text ?? '';

test("a principal cannot reach another principal's handle, by any route", async () => {
  const alice = await modernClient(ALICE);
  const bob = await modernClient(BOB);
  const mine = await alice.callTool({ name: 'run_code', arguments: { code: 'secret = "Xq7pLm"' } });
  assert.equal(mine.isError, false, errorText(mine));
  const handle = mine.structuredContent.session_id;
  assert.match(handle, /^s-[0-9a-f]{32}~/);
  await alice.callTool({ name: 'run_shell', arguments: { session_id: handle, command: 'echo s3cret > /tmp/k' } });
  const containers = (await containersOfInstance(instanceId)).length;

  for (const [tool, args] of [
    ['run_code', { code: 'secret' }], ['run_shell', { command: 'cat /tmp/k' }],
    ['download_file', { path: '/tmp/k' }], ['list_files', { path: '/tmp' }],
    ['get_session_stats', {}], ['upload_file', { path: '/tmp/k', content: 'x' }], ['cleanup_session', {}],
  ]) {
    const stolen = await bob.callTool({ name: tool, arguments: { ...args, session_id: handle } });
    assert.equal(stolen.isError, true, `bob's ${tool} reached alice's sandbox`);
    assert.match(errorText(stolen), /Unknown session/, `${tool}: ${errorText(stolen)}`);
    assert.doesNotMatch(JSON.stringify(stolen), /s3cret|Xq7pLm/);
  }
  const listed = await bob.callTool({ name: 'list_sessions', arguments: {} });
  assert.deepEqual(listed.structuredContent.sessions, []);
  const read = await raw(BOB, 'resources/read', { uri: `sandbox://${handle}/tmp/k` },
    { 'mcp-name': `sandbox://${handle}/tmp/k` });
  assert.ok(read.body.error, JSON.stringify(read.body));
  assert.doesNotMatch(JSON.stringify(read.body), /s3cret/);

  // Nor from a 2025 MCP session of bob's.
  const legacy = (await connectHttp(server.url, auth(BOB))).client;
  open.push(legacy);
  const viaLegacy = await legacy.callTool({ name: 'run_code', arguments: { code: 'secret', session_id: handle } });
  assert.equal(viaLegacy.isError, true);
  assert.equal((await containersOfInstance(instanceId)).length, containers, 'an attempt started a sandbox');

  // Alice's sandbox is untouched.
  const still = await alice.callTool({ name: 'run_code', arguments: { code: 'secret', session_id: handle } });
  assert.equal(still.structuredContent.result, "'Xq7pLm'");
  await alice.callTool({ name: 'cleanup_session', arguments: { session_id: handle } });
});

test("a principal cannot poll, cancel or answer another principal's task", async () => {
  const tasks = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
  const started = await raw(ALICE, 'tools/call', { _meta: { ...META, ...tasks }, name: 'run_code',
    arguments: { code: 'import time\ntime.sleep(3)\n"Xq7pLm"' } }, { 'mcp-name': 'run_code' });
  const task = started.body.result;
  assert.equal(task.resultType, 'task', JSON.stringify(started.body));
  for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
    const { body } = await raw(BOB, method, { _meta: { ...META, ...tasks }, taskId: task.taskId },
      { 'mcp-name': task.taskId });
    assert.equal(body.error?.code, -32602, `${method}: ${JSON.stringify(body)}`);
  }
  let polled;
  do {
    await new Promise((r) => setTimeout(r, task.pollIntervalMs));
    polled = (await raw(ALICE, 'tasks/get', { _meta: { ...META, ...tasks }, taskId: task.taskId },
      { 'mcp-name': task.taskId })).body.result;
  } while (polled.status === 'working');
  assert.equal(polled.status, 'completed', "bob's cancel reached alice's task");
  assert.equal(polled.result.structuredContent.result, "'Xq7pLm'");
  const listed = (await raw(ALICE, 'tools/call', { _meta: META, name: 'list_sessions', arguments: {} },
    { 'mcp-name': 'list_sessions' })).body.result.structuredContent.sessions;
  for (const s of listed) {
    await raw(ALICE, 'tools/call', { _meta: META, name: 'cleanup_session', arguments: { session_id: s.session_id } },
      { 'mcp-name': 'cleanup_session', 'mcp-param-session-id': s.session_id });
  }
});

test("another principal's 2025 MCP session does not exist for it, and it cannot end it", async () => {
  const { client, transport } = await connectHttp(server.url, auth(ALICE));
  open.push(client);
  const sid = transport.sessionId;
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' });
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  const asBob = await fetch(server.url, { method: 'POST', headers: { ...headers, ...auth(BOB) }, body: ping });
  assert.equal(asBob.status, 404);
  const deleted = await fetch(server.url, { method: 'DELETE', headers: { ...auth(BOB), 'mcp-session-id': sid } });
  assert.equal(deleted.status, 404);
  const asAlice = await fetch(server.url, { method: 'POST', headers: { ...headers, ...auth(ALICE) }, body: ping });
  assert.equal(asAlice.status, 200, 'the session survived');
  // No principal's stateless endpoint is a session a client can name either.
  const borrowed = await fetch(server.url, { method: 'POST',
    headers: { ...headers, ...auth(BOB), 'mcp-session-id': 'principal:alice' }, body: ping });
  assert.equal(borrowed.status, 404);
});

test('guessed handles find nothing and start nothing', async () => {
  const before = (await containersOfInstance(instanceId)).length;
  const guesses = [];
  for (let i = 0; i < 64; i++) guesses.push(`s-${randomBytes(16).toString('hex')}~${instanceId}`);
  guesses.push('s-00000000000000000000000000000000', 'default', 'principal:alice', '../../etc', 's-1');
  await Promise.all(guesses.map(async (guess) => {
    const { status, body } = await raw(BOB, 'tools/call', { name: 'run_code', arguments: { code: '1', session_id: guess } },
      { 'mcp-name': 'run_code', 'mcp-param-session-id': guess });
    assert.equal(status, 200, JSON.stringify(body));
    assert.equal(body.result.isError, true, `${guess}: ${JSON.stringify(body)}`);
    assert.match(body.result.content[0].text, /Unknown session|session_id may only contain/);
  }));
  assert.equal((await containersOfInstance(instanceId)).length, before, 'a guess started a sandbox');
});

test('a header that disagrees with the body is refused before anything runs', async () => {
  const alice = await modernClient(ALICE);
  const a = await alice.callTool({ name: 'run_code', arguments: { code: 'v = "a"' } });
  const b = await alice.callTool({ name: 'run_code', arguments: { code: 'v = "b"' } });
  const [first, second] = [a.structuredContent.session_id, b.structuredContent.session_id];
  const cases = [
    ['the header names another handle', { 'mcp-name': 'run_code', 'mcp-param-session-id': second }],
    ['no header for the body\'s handle', { 'mcp-name': 'run_code' }],
    ['Mcp-Name names another tool', { 'mcp-name': 'run_shell', 'mcp-param-session-id': first }],
    ['an encoded header naming another handle',
      { 'mcp-name': 'run_code', 'mcp-param-session-id': `=?base64?${Buffer.from(second).toString('base64')}?=` }],
  ];
  for (const [what, headers] of cases) {
    const { status, body } = await raw(ALICE, 'tools/call',
      { name: 'run_code', arguments: { code: 'v = "overwritten"', session_id: first } }, headers);
    assert.equal(status, 400, what);
    assert.equal(body.error.code, -32020, `${what}: ${JSON.stringify(body)}`);
    assert.equal(body.id, 1);
  }
  for (const [sid, value] of [[first, "'a'"], [second, "'b'"]]) {
    const out = await alice.callTool({ name: 'run_code', arguments: { code: 'v', session_id: sid } });
    assert.equal(out.structuredContent.result, value, 'a refused request ran');
  }
  for (const sid of [first, second]) {
    await alice.callTool({ name: 'cleanup_session', arguments: { session_id: sid } });
  }
});

test("a principal's quota holds across its MCP sessions and its stateless requests", async () => {
  const modern = await modernClient(ALICE); // alice: max_sessions 2
  const legacy = (await connectHttp(server.url, auth(ALICE))).client;
  open.push(legacy);
  const one = await modern.callTool({ name: 'run_code', arguments: { code: '1' } });
  const two = await legacy.callTool({ name: 'run_code', arguments: { code: '2' } });
  assert.equal(one.isError, false, errorText(one));
  assert.equal(two.isError, false, errorText(two));
  for (const client of [modern, legacy]) {
    const third = await client.callTool({ name: 'run_code', arguments: { code: '3' } });
    assert.equal(third.isError, true, 'alice went past her quota by opening another MCP session');
    assert.match(errorText(third), /^busy: this client holds 2 sessions/);
  }
  // Bob's quota is his own.
  const bob = await modernClient(BOB);
  const his = await bob.callTool({ name: 'run_code', arguments: { code: '4' } });
  assert.equal(his.isError, false, errorText(his));
  await modern.callTool({ name: 'cleanup_session', arguments: { session_id: one.structuredContent.session_id } });
  await legacy.callTool({ name: 'cleanup_session', arguments: { session_id: two.structuredContent.session_id } });
  await bob.callTool({ name: 'cleanup_session', arguments: { session_id: his.structuredContent.session_id } });
  await waitFor(async () => (await containersOfInstance(instanceId)).length === 0, 30000, 'the sandboxes to go');
});

test("a principal's snapshot quota holds across its MCP sessions and its stateless requests", async () => {
  const modern = await modernClient(ALICE);
  const legacy = (await connectHttp(server.url, auth(ALICE))).client;
  open.push(legacy);
  const mine = [];
  for (const client of [modern, legacy]) {
    const made = await client.callTool({ name: 'run_code', arguments: { code: 'x = 1' } });
    assert.equal(made.isError, false, errorText(made));
    mine.push({ client, sid: made.structuredContent.session_id });
  }
  for (const [i, { client, sid }] of mine.entries()) {
    const taken = await client.callTool({ name: 'snapshot_session', arguments: { session_id: sid, name: `s${i}` } });
    assert.equal(taken.isError, false, errorText(taken));
  }
  // Each MCP session holds one: a third, from either, passes the principal's 2.
  for (const [i, { client, sid }] of mine.entries()) {
    const third = await client.callTool({ name: 'snapshot_session', arguments: { session_id: sid, name: `more${i}` } });
    assert.equal(third.isError, true, 'alice held a third snapshot through another MCP session');
    assert.match(errorText(third), /^busy: this client holds 2 snapshots/);
  }
  // Bob's room is his own.
  const bob = await modernClient(BOB);
  const his = await bob.callTool({ name: 'run_code', arguments: { code: '1' } });
  const hisSid = his.structuredContent.session_id;
  const hisSnap = await bob.callTool({ name: 'snapshot_session', arguments: { session_id: hisSid, name: 's0' } });
  assert.equal(hisSnap.isError, false, errorText(hisSnap));
  for (const { client, sid } of [...mine, { client: bob, sid: hisSid }]) {
    await client.callTool({ name: 'cleanup_session', arguments: { session_id: sid } });
  }
  await waitFor(async () => (await containersOfInstance(instanceId)).length === 0, 30000, 'the sandboxes to go');
});
