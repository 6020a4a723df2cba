// A replica as a fleet sees it, end to end with the official MCP client, the real server, dockerd
// and runsc: /healthz, /readyz and /metrics, its instance id on its containers, and the graceful
// drain on SIGTERM (new sessions refused at once, running executions finish within
// shutdown.grace_s, clients told, a second signal ends at once, nothing left behind).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  connectHttp, containersOfInstance, dockerExec, getEndpoint, sandboxContainerId, startHttpServer,
  stopServer, waitFor, waitForFilePython,
} from './harness.mjs';
import { call } from './flow.mjs';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-drain-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// A server with its own instance id and `config`; returns { server, instanceId }.
async function startReplica(config = {}) {
  const instanceId = `e2e-${Math.random().toString(16).slice(2, 10)}`;
  const file = path.join(dir, `${instanceId}.json`);
  writeFileSync(file, JSON.stringify({ instance_id: instanceId, pool: { size: 0 }, ...config }));
  const server = await startHttpServer(['--config', file]);
  return { server, instanceId };
}

function exitOf(server) {
  if (server.exitCode !== null) return Promise.resolve(server.exitCode);
  return new Promise((resolve) => server.on('exit', (code) => resolve(code)));
}

// The value of one sample line of a Prometheus text exposition, or undefined.
function sample(text, series) {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

// Starts `code` (in sandbox session `sessionId`, else a new one) and resolves once its output
// began (it is running), to { result }: the call's promise (wrapped, or awaiting this would wait
// for the whole call).
async function startRunning(client, code, sessionId = undefined) {
  let begun;
  const running = new Promise((resolve) => { begun = resolve; });
  const result = client.callTool(
    { name: 'run_code', arguments: { code, timeout: 90, ...(sessionId ? { session_id: sessionId } : {}) } },
    undefined, { onprogress: () => begun(), timeout: 120000 });
  result.catch(() => {}); // observed later; not an unhandled rejection meanwhile
  await running;
  return { result };
}

test('health, readiness and metrics describe the replica; its containers carry its instance id', async () => {
  const { server, instanceId } = await startReplica({ pool: { size: 1 } });
  const conn = await connectHttp(server.url);
  try {
    const health = await getEndpoint(server.url, '/healthz');
    assert.equal(health.status, 200);
    assert.equal(health.text, 'ok\n');

    await waitFor(async () => JSON.parse((await getEndpoint(server.url, '/readyz')).text).pool.ready === 1,
      60000, 'the warm pool to fill');
    const ready = await getEndpoint(server.url, '/readyz');
    assert.equal(ready.status, 200, ready.text);
    const readiness = JSON.parse(ready.text);
    assert.equal(readiness.ready, true);
    assert.equal(readiness.draining, false);
    assert.equal(readiness.instance_id, instanceId);
    assert.deepEqual(readiness.failed, []);
    assert.ok(readiness.checks.some((c) => c.name === 'docker engine' && c.ok));

    const first = await call(conn.client, 'run_code', { code: '6*7' });
    assert.equal(first.structuredContent.result, '42');
    await call(conn.client, 'run_code', { code: '1/0', session_id: first.structuredContent.session_id });
    // The pool refills in the background once its sandbox is taken: wait for the new one.
    await waitFor(async () => (await containersOfInstance(instanceId)).length >= 2, 30000,
      'the pool to refill');
    const ours = await containersOfInstance(instanceId);
    assert.equal(ours.length, 2, 'the session sandbox and one pooled sandbox, both labelled');

    const metrics = await getEndpoint(server.url, '/metrics');
    assert.equal(metrics.status, 200);
    assert.match(metrics.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    const text = metrics.text;
    assert.equal(sample(text, 'sandbox_mcp_tool_calls_total{status="success",tool="run_code"}'), 1);
    assert.equal(sample(text, 'sandbox_mcp_tool_calls_total{status="error",tool="run_code"}'), 1);
    assert.equal(sample(text, 'sandbox_mcp_tool_call_seconds_count{tool="run_code"}'), 2);
    assert.equal(sample(text, `sandbox_mcp_info{instance_id="${instanceId}"}`), 1);
    assert.equal(sample(text, 'sandbox_mcp_sessions'), 1);
    assert.equal(sample(text, 'sandbox_mcp_mcp_sessions'), 1);
    assert.equal(sample(text, 'sandbox_mcp_session_create_seconds_count{source="pool"}'), 1);
    assert.equal(sample(text, 'sandbox_mcp_draining'), 0);
    assert.equal(sample(text, 'sandbox_mcp_busy_refusals_total{limit="executions"}'), 0);
    assert.match(text, /# TYPE sandbox_mcp_pool_misses_total counter/);
    assert.equal(sample(text, 'sandbox_mcp_engine_errors_total{kind="transport"}'), 0);
  } finally {
    await conn.client.close();
    assert.equal(await stopServer(server), 0);
  }
  assert.deepEqual(await containersOfInstance(instanceId), []);
});

test('SIGTERM drains: new sessions refused, the running execution finishes, the client is told', async () => {
  const { server, instanceId } = await startReplica({ shutdown: { grace_s: 60 } });
  const conn = await connectHttp(server.url);
  const notices = [];
  conn.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => notices.push(n.params));
  try {
    // The execution runs until the test lets it go (it touches /tmp/go in the sandbox after its
    // assertions), not for a fixed time a loaded machine could outlast. Its container is learned
    // first: a second call on the session would queue behind the running one.
    const session = (await call(conn.client, 'run_code', { code: '1' })).structuredContent.session_id;
    const container = await sandboxContainerId(conn.client, session);
    const { result: running } = await startRunning(conn.client,
      `print("started", flush=True)\n${waitForFilePython()}print("finished")`, session);
    const exited = exitOf(server);
    server.kill('SIGTERM');

    await waitFor(async () => (await getEndpoint(server.url, '/readyz')).status === 503, 5000,
      '/readyz to fail once draining');
    const readiness = JSON.parse((await getEndpoint(server.url, '/readyz')).text);
    assert.equal(readiness.draining, true);
    assert.equal(readiness.executions_running, 1);
    assert.equal((await getEndpoint(server.url, '/healthz')).status, 200, 'still alive while draining');

    const refused = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '5');
    assert.match((await refused.json()).error.message, /shutting down/);

    assert.equal(await dockerExec(container, ['touch', '/tmp/go']), 0);
    const result = await running;
    assert.equal(result.isError, false, JSON.stringify(result));
    assert.equal(result.structuredContent.status, 'success');
    assert.match(result.structuredContent.stdout, /started\ngo\nfinished/);
    assert.ok(notices.some((n) => n.level === 'warning' && /shutting down/.test(n.data)),
      `a warning notice reached the client: ${JSON.stringify(notices)}`);
    assert.equal(await exited, 0);
  } finally {
    await conn.client.close().catch(() => {});
  }
  assert.deepEqual(await containersOfInstance(instanceId), []);
});

test('past shutdown.grace_s a running execution is cut short, and the server still cleans up', async () => {
  const { server, instanceId } = await startReplica({ shutdown: { grace_s: 1 } });
  const conn = await connectHttp(server.url);
  try {
    const { result: running } = await startRunning(conn.client,
      'import time\nprint("go", flush=True)\ntime.sleep(60)');
    const started = Date.now();
    const exited = exitOf(server);
    server.kill('SIGTERM');
    const outcome = await running.then((r) => r, (e) => e);
    assert.ok(outcome instanceof Error || outcome.isError || outcome.structuredContent?.status !== 'success',
      `the 60 s execution did not succeed: ${JSON.stringify(outcome)}`);
    assert.equal(await exited, 0);
    assert.ok(Date.now() - started < 20000, `stopped ${Date.now() - started} ms after SIGTERM`);
  } finally {
    await conn.client.close().catch(() => {});
  }
  assert.deepEqual(await containersOfInstance(instanceId), []);
});

test('a second signal ends the drain at once', async () => {
  const { server, instanceId } = await startReplica({ shutdown: { grace_s: 600 } });
  const conn = await connectHttp(server.url);
  try {
    await startRunning(conn.client, 'import time\nprint("go", flush=True)\ntime.sleep(60)');
    const exited = exitOf(server);
    server.kill('SIGTERM');
    await waitFor(async () => (await getEndpoint(server.url, '/readyz')).status === 503, 5000, 'the drain');
    const second = Date.now();
    server.kill('SIGTERM');
    assert.equal(await exited, 0);
    assert.ok(Date.now() - second < 15000, `stopped ${Date.now() - second} ms after the second signal`);
  } finally {
    await conn.client.close().catch(() => {});
  }
  assert.deepEqual(await containersOfInstance(instanceId), []);
});
