// End to end over Streamable HTTP with the official MCP TypeScript client, plus the HTTP-level
// guards (Origin, bearer token, body limit, session header) checked with raw requests.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import {
  connectHttp, containersOfSession, sandboxContainerId, SERVER_BIN, startHttpServer, stopServer, waitFor,
} from './harness.mjs';
import { assertToolList, badInputFlow, call, seedFlow } from './flow.mjs';

const INIT = {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

let server;
before(async () => {
  server = await startHttpServer();
});
after(async () => {
  const code = await stopServer(server);
  assert.equal(code, 0, server.logText());
});

test('tools/list and the seed flow over HTTP', async () => {
  const { client } = await connectHttp(server.url);
  await assertToolList(client);
  await seedFlow(client);
  await badInputFlow(client);
  await client.close();
});

test('a session id made in one MCP session is unknown to another', async () => {
  const a = await connectHttp(server.url);
  const b = await connectHttp(server.url);
  const made = await call(a.client, 'run_code', { code: 'secret = 1' });
  const sid = made.structuredContent.session_id;
  const stolen = await call(b.client, 'run_code', { code: 'secret', session_id: sid });
  // b cannot use a's session, nor make one under its id.
  assert.equal(stolen.isError, true);
  assert.ok(stolen.content[0].text.startsWith(`Unknown session '${sid}'`), stolen.content[0].text);
  const stats = await call(b.client, 'list_sessions', {});
  assert.equal(stats.structuredContent.sessions.length, 0);
  const own = await call(b.client, 'run_code', { code: 'mine = 2' });
  const bSid = own.structuredContent.session_id;
  assert.notEqual(bSid, sid);
  const aIds = [await sandboxContainerId(a.client, sid)];
  const bIds = [await sandboxContainerId(b.client, bSid)];
  assert.notEqual(aIds[0], bIds[0]);
  assert.equal((await containersOfSession(sid, aIds)).length, 1);
  // DELETE (terminateSession) ends a's MCP session and removes its sandbox; b's remains.
  await a.transport.terminateSession();
  await waitFor(async () => (await containersOfSession(sid, aIds)).length === 0, 15000, 'a sandbox removal');
  assert.equal((await containersOfSession(bSid, bIds)).length, 1);
  await b.transport.terminateSession();
  await waitFor(async () => (await containersOfSession(bSid, bIds)).length === 0, 15000, 'b sandbox removal');
});

test('wrong Origin is refused with 403', async () => {
  const res = await fetch(server.url, {
    method: 'POST', headers: { ...JSON_HEADERS, origin: 'http://evil.example' }, body: JSON.stringify(INIT),
  });
  assert.equal(res.status, 403);
  const ok = await fetch(server.url, {
    method: 'POST', headers: { ...JSON_HEADERS, origin: 'http://localhost:3000' }, body: JSON.stringify(INIT),
  });
  assert.equal(ok.status, 200);
  const sid = ok.headers.get('mcp-session-id');
  assert.ok(sid);
  const del = await fetch(server.url, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
  assert.equal(del.status, 204);
});

test('missing and unknown session ids, GET, and oversized bodies get clear errors', async () => {
  const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
  const missing = await fetch(server.url, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(ping) });
  assert.equal(missing.status, 400);
  assert.match(await missing.text(), /Mcp-Session-Id/i);
  const unknown = await fetch(server.url, {
    method: 'POST', headers: { ...JSON_HEADERS, 'mcp-session-id': 'deadbeef' }, body: JSON.stringify(ping),
  });
  assert.equal(unknown.status, 404);
  const get = await fetch(server.url, { method: 'GET', headers: { accept: 'text/event-stream' } });
  assert.equal(get.status, 405);
  const huge = await fetch(server.url, {
    method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ ...INIT, pad: 'x'.repeat(49 * 1024 * 1024) }), // past http.max_body_bytes
  }).catch((err) => err);
  if (huge instanceof Error) {
    // The server may close the connection while the client is still sending; then it must
    // still be serving afterwards (checked below).
    assert.ok(huge.cause?.code === 'EPIPE' || huge.cause?.code === 'ECONNRESET', String(huge.cause?.code));
  } else {
    assert.equal(huge.status, 413);
    assert.match(await huge.text(), /max_body_bytes/);
  }
  const again = await fetch(server.url, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(INIT) });
  assert.equal(again.status, 200);
  await fetch(server.url, { method: 'DELETE', headers: { 'mcp-session-id': again.headers.get('mcp-session-id') } });
});

test('with a token configured, requests without it get 401', async () => {
  const guarded = await startHttpServer([], { SANDBOX_MCP_TOKEN: 'e2e-secret-token' });
  try {
    const res = await fetch(guarded.url, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(INIT) });
    assert.equal(res.status, 401);
    const wrong = await fetch(guarded.url, {
      method: 'POST', headers: { ...JSON_HEADERS, authorization: 'Bearer nope' }, body: JSON.stringify(INIT),
    });
    assert.equal(wrong.status, 401);
    const { client } = await connectHttp(guarded.url, { authorization: 'Bearer e2e-secret-token' });
    const r = await call(client, 'run_code', { code: '2 ** 10' });
    assert.equal(r.structuredContent.result, '1024');
    await client.close();
  } finally {
    assert.equal(await stopServer(guarded), 0);
  }
});

test('binding beyond loopback without a token is refused at start-up', () => {
  const env = { ...process.env };
  delete env.SANDBOX_MCP_TOKEN;
  const res = spawnSync(SERVER_BIN, ['--http', '0.0.0.0:0'], { env, encoding: 'utf8', timeout: 30000 });
  assert.notEqual(res.status, 0);
  assert.match(res.stderr, /token/i);
});

test('a crashed server (SIGKILL) leaves no sandbox, sidecar or directory behind', async () => {
  const runtimeRoot = '/run/sandbox-mcp';
  const dirsBefore = new Set(fs.existsSync(runtimeRoot) ? fs.readdirSync(runtimeRoot) : []);
  const doomed = await startHttpServer();
  const { client } = await connectHttp(doomed.url);
  const made = await call(client, 'run_code', {
    code: 'x = 1', mcp_allowlist: ['https://mcp.example.com/mcp'],
  });
  const sid = made.structuredContent.session_id;
  const kinds = (await containersOfSession(sid)).map((c) => c.Labels['sandbox-mcp.role'] ?? 'sandbox');
  assert.deepEqual(kinds.sort(), ['sandbox', 'sidecar']);
  const ownEntries = fs.readdirSync(runtimeRoot).filter((d) => !dirsBefore.has(d));
  const ownDirs = ownEntries.filter((d) => !d.endsWith('.lock'));
  const exited = new Promise((resolve) => doomed.on('exit', resolve));
  doomed.kill('SIGKILL');
  await exited;
  // Its run-time directory and the lock file holding its instance id.
  assert.equal(ownDirs.length, 1, `the server made one run-time directory: ${ownEntries}`);
  assert.deepEqual(ownEntries.filter((d) => d.endsWith('.lock')), [`${ownDirs[0]}.lock`]);
  // The agent and the sidecar see their stdin close and exit; the engine removes both
  // containers (AutoRemove).
  await waitFor(async () => (await containersOfSession(sid)).length === 0, 20000, 'orphan removal');
  // The dead server's directory goes when the next server starts.
  assert.ok(fs.existsSync(path.join(runtimeRoot, ownDirs[0])));
  const next = await startHttpServer();
  try {
    assert.equal(fs.existsSync(path.join(runtimeRoot, ownDirs[0])), false,
      'the next server did not remove the dead server\'s run-time directory');
    assert.equal(fs.existsSync(path.join(runtimeRoot, `${ownDirs[0]}.lock`)), false,
      'the next server did not remove the dead server\'s unheld lock file');
  } finally {
    await stopServer(next);
  }
});
