// MCP 2026-07-28 end to end: the official v2 client (@modelcontextprotocol/client) pinned to the
// stateless revision, and in auto mode, drives the real server over stdio and Streamable HTTP; a
// 2025-11-25 client keeps working on the same binary and the same HTTP endpoint. The v2 client probes with server/discover in a short-lived
// copy of the server process, which it then stops: nothing may be left behind by it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  SERVER_BIN, connectHttp, connectStdioV2, containersOfInstance, startHttpServer, stopServer,
  waitFor,
} from './harness.mjs';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-modern-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// A config naming its own instance, so that the probe's server and the session's server label
// their containers alike and the test can see both go.
function configFile(extra = {}) {
  const instanceId = `e2e-modern-${Math.random().toString(16).slice(2, 10)}`;
  const file = path.join(dir, `${instanceId}.json`);
  writeFileSync(file, JSON.stringify({ instance_id: instanceId, pool: { size: 1 }, ...extra }));
  return { file, instanceId };
}

async function connectModern(mode, config) {
  const client = new Client({ name: 'sandbox-mcp-e2e-v2', version: '1.0.0' },
    { versionNegotiation: { mode } });
  const transport = new StdioClientTransport({
    command: SERVER_BIN, args: ['--stdio', '--config', config.file], stderr: 'ignore',
  });
  await client.connect(transport);
  return client;
}

async function run(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.ok(!res.isError, JSON.stringify(res).slice(0, 600));
  return res.structuredContent;
}

test('a client pinned to 2026-07-28 connects over stdio and keeps a sandbox by session_id', async () => {
  const config = configFile();
  const client = await connectModern({ pin: '2026-07-28' }, config);
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    assert.equal(client.getServerVersion().name, 'sandbox-mcp');
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'run_code'), tools.map((t) => t.name).join(','));

    const first = await run(client, 'run_code', { code: 'x = 6 * 7\nprint("made x")' });
    assert.equal(first.stdout, 'made x\n');
    const sid = first.session_id;
    // No MCP session holds the sandbox: the handle does, request after request.
    assert.equal((await run(client, 'run_code', { code: 'x', session_id: sid })).result, '42');
    assert.equal((await run(client, 'run_shell', { command: 'echo $((1+2))', session_id: sid })).stdout, '3\n');
    const listed = await run(client, 'list_sessions', {});
    assert.ok(listed.sessions.some((s) => s.session_id === sid), JSON.stringify(listed));
    await run(client, 'cleanup_session', { session_id: sid });
  } finally {
    await client.close();
  }
  // The probe's server and the session's server both stopped and removed what they made.
  await waitFor(async () => (await containersOfInstance(config.instanceId)).length === 0, 30000,
    `the containers of instance ${config.instanceId} to go`);
});

test('a client in auto mode chooses 2026-07-28', async () => {
  const config = configFile({ pool: { size: 0 } });
  const client = await connectModern('auto', config);
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    const res = await run(client, 'run_code', { code: '1 + 1' });
    assert.equal(res.result, '2');
    await run(client, 'cleanup_session', { session_id: res.session_id });
  } finally {
    await client.close();
  }
});

// What the v2 client's stdio probe does to a copy of the server: server/discover, then stdin
// closed and SIGTERM (SIGKILL if it has not exited a second later). Such a copy must start no
// sandbox (its warm pool waits for a client request), so it has nothing to remove and exits at once.
test('a process that only answers server/discover starts no sandbox and exits cleanly on SIGTERM', async () => {
  const config = configFile({ pool: { size: 2 } });
  const child = spawn(SERVER_BIN, ['--stdio', '--config', config.file, '--log-level', 'debug'],
    { stdio: ['pipe', 'pipe', 'pipe'] });
  let log = '';
  child.stderr.on('data', (chunk) => { log += chunk.toString(); });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const answered = new Promise((resolve) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(JSON.parse(out.slice(0, out.indexOf('\n'))));
    });
  });
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
  } } })}\n`);
  const reply = await answered;
  assert.deepEqual(reply.result.supportedVersions, ['2026-07-28'], JSON.stringify(reply));
  child.stdin.end();
  child.kill('SIGTERM');
  assert.deepEqual(await exited, { code: 0, signal: null }, log);
  // Nothing to wait for: no container was ever made for this instance.
  assert.deepEqual(await containersOfInstance(config.instanceId), [], log);
  assert.doesNotMatch(log, /started under|pooled sandbox/, 'the probe copy started a sandbox');
  assert.match(log, /stopped; all sandboxes removed/);
});

test('the session server of a pinned client fills its warm pool and its first run_code takes from it', async () => {
  const config = configFile();
  const { client, stderr } = await connectStdioV2({ pin: '2026-07-28' },
    ['--config', config.file, '--log-level', 'debug']);
  try {
    await client.listTools(); // what a host does on connecting: the pool starts filling now
    await waitFor(() => /pooled sandbox \S+ ready in/.test(stderr.join('')), 60000,
      'a pooled sandbox to be ready');
    const first = await run(client, 'run_code', { code: '1 + 1' });
    assert.equal(first.result, '2');
    const stats = await run(client, 'get_session_stats', { session_id: first.session_id });
    assert.equal(stats.warm_start, true, JSON.stringify(stats));
    await run(client, 'cleanup_session', { session_id: first.session_id });
  } finally {
    await client.close();
  }
  await waitFor(async () => (await containersOfInstance(config.instanceId)).length === 0, 30000,
    `the containers of instance ${config.instanceId} to go`);
});

// Raw JSON lines over stdio: what a client gets for a malformed or foreign request, and that the
// same process then still serves both eras.
test('bad 2026 requests get the revision\'s errors and the server keeps serving both eras', async () => {
  const config = configFile({ pool: { size: 0 } });
  const child = spawn(SERVER_BIN, ['--stdio', '--config', config.file], { stdio: ['pipe', 'pipe', 'ignore'] });
  const lines = [];
  let buffer = '';
  const waiters = [];
  child.stdout.on('data', (chunk) => {
    buffer += chunk.toString();
    let newline;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buffer.slice(0, newline)));
      buffer = buffer.slice(newline + 1);
      waiters.splice(0).forEach((wake) => wake());
    }
  });
  const ask = async (message) => {
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
    for (;;) {
      const found = lines.find((l) => l.id === message.id);
      if (found) return found;
      await new Promise((resolve) => { waiters.push(resolve); setTimeout(resolve, 200); });
    }
  };
  const meta = (version = '2026-07-28') => ({
    'io.modelcontextprotocol/protocolVersion': version,
    'io.modelcontextprotocol/clientCapabilities': {},
  });
  try {
    const unsupported = await ask({ id: 'v', method: 'tools/list', params: { _meta: meta('v999.0.0') } });
    assert.equal(unsupported.error.code, -32022, JSON.stringify(unsupported));
    assert.deepEqual(unsupported.error.data, { supported: ['2026-07-28'], requested: 'v999.0.0' });

    const noCapabilities = await ask({ id: 'c', method: 'tools/list',
      params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
    assert.equal(noCapabilities.error.code, -32602, JSON.stringify(noCapabilities));
    assert.match(noCapabilities.error.message, /clientCapabilities/);

    const removed = await ask({ id: 'p', method: 'ping', params: { _meta: meta() } });
    assert.equal(removed.error.code, -32601, JSON.stringify(removed));

    const discovered = await ask({ id: 'd', method: 'server/discover', params: { _meta: meta() } });
    assert.deepEqual(discovered.result.supportedVersions, ['2026-07-28']);
    assert.equal(discovered.result.resultType, 'complete');

    const listed = await ask({ id: 'l', method: 'tools/list', params: { _meta: meta() } });
    assert.equal(listed.result.resultType, 'complete');
    assert.equal(listed.result.cacheScope, 'public');
    assert.ok(Number.isInteger(listed.result.ttlMs) && listed.result.ttlMs >= 0);
    const again = await ask({ id: 'l2', method: 'tools/list', params: { _meta: meta() } });
    assert.deepEqual(again.result.tools.map((t) => t.name), listed.result.tools.map((t) => t.name),
      'tools/list must list the tools in a stable order');

    // The 2025 protocol on the same process: initialize, then a request without _meta.
    const init = await ask({ id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25',
      capabilities: {}, clientInfo: { name: 'old', version: '1' } } });
    assert.equal(init.result.protocolVersion, '2025-11-25');
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    const legacyList = await ask({ id: 2, method: 'tools/list', params: {} });
    assert.ok(legacyList.result.tools.length > 0, JSON.stringify(legacyList).slice(0, 300));
  } finally {
    child.stdin.end();
    await new Promise((resolve) => child.once('exit', resolve));
  }
});

test('over Streamable HTTP a pinned client keeps sandboxes by handle, beside a 2025 client', async () => {
  const config = configFile({ pool: { size: 0 } });
  const server = await startHttpServer(['--config', config.file]);
  const modern = new Client({ name: 'sandbox-mcp-e2e-v2', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  let legacy;
  try {
    await modern.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    assert.equal(modern.getNegotiatedProtocolVersion(), '2026-07-28');
    const first = await run(modern, 'run_code', { code: 'x = 20' });
    const sid = first.session_id;
    // Each request is on its own: the handle alone finds the sandbox again.
    assert.equal((await run(modern, 'run_code', { code: 'x + 1', session_id: sid })).result, '21');

    legacy = await connectHttp(server.url);
    const theirs = await run(legacy.client, 'run_code', { code: '"old"' });
    assert.equal(theirs.result, "'old'");
    const listed = await run(legacy.client, 'list_sessions', {});
    assert.ok(!listed.sessions.some((s) => s.session_id === sid),
      'a 2025 MCP session must not list the sandboxes of 2026-07-28 requests');

    const post = (body, headers = {}) => fetch(server.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2026-07-28', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', ...body }),
    });
    const meta = (version = '2026-07-28') => ({
      'io.modelcontextprotocol/protocolVersion': version,
      'io.modelcontextprotocol/clientCapabilities': {},
    });
    const ping = await post({ id: 'p', method: 'ping', params: { _meta: meta() } }, { 'Mcp-Method': 'ping' });
    assert.equal(ping.status, 404);
    assert.equal((await ping.json()).error.code, -32601);
    const mismatch = await post({ id: 'm', method: 'tools/list', params: { _meta: meta('v999.0.0') } },
      { 'Mcp-Method': 'tools/list' });
    assert.equal(mismatch.status, 400);
    const mismatchBody = await mismatch.json();
    assert.equal(mismatchBody.error.code, -32020, JSON.stringify(mismatchBody));
    assert.equal(mismatchBody.id, 'm', 'an HTTP-level error names the request');
    const unsupported = await post({ id: 'u', method: 'tools/list', params: { _meta: meta('v999.0.0') } },
      { 'Mcp-Method': 'tools/list', 'MCP-Protocol-Version': 'v999.0.0' });
    // The guard refuses an unknown MCP-Protocol-Version before the body is read.
    assert.equal(unsupported.status, 400);
    const wrongName = await post({ id: 'n', method: 'tools/call',
      params: { _meta: meta(), name: 'run_code', arguments: { code: '1' } } },
    { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'run_shell' });
    assert.equal(wrongName.status, 400);
    assert.equal((await wrongName.json()).error.code, -32020);
    // session_id travels as Mcp-Param-Session-Id too (x-mcp-header): a front routes by it, so
    // it must agree with the body, and be there whenever the body names a session.
    const tools = await modern.listTools();
    assert.equal(tools.tools.find((t) => t.name === 'run_code').inputSchema.properties.session_id['x-mcp-header'],
      'Session-Id');
    const callIn = (id, header) => post({ id, method: 'tools/call',
      params: { _meta: meta(), name: 'run_code', arguments: { code: 'x', session_id: sid } } },
    { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'run_code', ...header });
    for (const [id, header] of [['no-header', {}], ['other', { 'Mcp-Param-Session-Id': `${sid}x` }]]) {
      const refused = await callIn(id, header);
      assert.equal(refused.status, 400, id);
      const body = await refused.json();
      assert.equal(body.error.code, -32020, JSON.stringify(body));
      assert.equal(body.id, id);
    }
    const agreed = await callIn('agreed', { 'Mcp-Param-Session-Id': sid });
    assert.equal(agreed.status, 200);
    const agreedText = await agreed.text();
    assert.match(agreedText, /"result":"20"/, agreedText.slice(0, 400));
    // 2026-07-28 over HTTP: closing a request's response stream cancels it (2025 requests run on).
    const abort = new AbortController();
    const cell = 'import time\ntime.sleep(20)\nopen("/tmp/finished", "w").write("x")';
    const abandoned = fetch(server.url, {
      method: 'POST',
      signal: abort.signal,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'run_code',
        'Mcp-Param-Session-Id': sid },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'long', method: 'tools/call',
        params: { _meta: meta(), name: 'run_code', arguments: { code: cell, session_id: sid } } }),
    }).catch((e) => e);
    await new Promise((r) => setTimeout(r, 1500));
    abort.abort();
    assert.equal((await abandoned).name, 'AbortError');
    // The next call to the session waits behind the first: it sees the cell cut short.
    const after = await run(modern, 'run_shell', { command: 'test -e /tmp/finished && echo ran || echo cancelled',
      session_id: sid });
    assert.equal(after.stdout, 'cancelled\n');
    // The tasks extension, declared by the client: a long call answers with a task, polled by id.
    const withTasks = { ...meta(),
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
    const started = await post({ id: 'task', method: 'tools/call', params: { _meta: withTasks, name: 'run_code',
      arguments: { code: 'import time\ntime.sleep(3)\n6 * 7', session_id: sid } } },
    { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'run_code', 'Mcp-Param-Session-Id': sid });
    const task = (await started.json()).result;
    assert.equal(task.resultType, 'task', JSON.stringify(task));
    assert.equal(task.status, 'working');
    const poll = async () => (await (await post({ id: 'get', method: 'tasks/get',
      params: { _meta: withTasks, taskId: task.taskId } }, { 'Mcp-Method': 'tasks/get', 'Mcp-Name': task.taskId })).json()).result;
    let polled = await poll();
    while (polled.status === 'working') {
      await new Promise((r) => setTimeout(r, task.pollIntervalMs));
      polled = await poll();
    }
    assert.equal(polled.status, 'completed', JSON.stringify(polled));
    assert.equal(polled.result.structuredContent.result, '42');
    // The principal's entry is no MCP session a client can name.
    const borrowed = await fetch(server.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': 'principal:local' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    assert.equal(borrowed.status, 404);
    await run(modern, 'cleanup_session', { session_id: sid });
  } finally {
    await modern.close().catch(() => {});
    await legacy?.client.close().catch(() => {});
    await stopServer(server);
  }
  await waitFor(async () => (await containersOfInstance(config.instanceId)).length === 0, 30000,
    `the containers of instance ${config.instanceId} to go`);
});
