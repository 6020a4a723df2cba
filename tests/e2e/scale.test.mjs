// Warm pool, streamed output and concurrent sessions, end to end: the official MCP client against
// the real server, dockerd and runsc. Behaviour only; speed is measured in bench/, not here.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  connectHttp, connectStdio, containersOfSession, dockerGet, sandboxContainerId, startHttpServer,
  stopServer, waitFor,
} from './harness.mjs';
import { call } from './flow.mjs';

let server;
let conn;
before(async () => {
  server = await startHttpServer(); // the default configuration: pool.size 2
  conn = await connectHttp(server.url);
});
after(async () => {
  await conn?.client.close();
  if (server) await stopServer(server);
});

// Containers of this server made for the warm pool (claimed ones keep the label).
async function pooledContainers() {
  const filters = encodeURIComponent(JSON.stringify({
    label: ['sandbox-mcp.pool=1', `sandbox-mcp.pid=${server.pid}`],
  }));
  const { body } = await dockerGet(`/containers/json?filters=${filters}`);
  return body;
}

test('a new session claims a pooled sandbox and the pool refills', async () => {
  await waitFor(async () => (await pooledContainers()).length === 2, 60000, 'the pool to fill');
  const ready = new Set((await pooledContainers()).map((c) => c.Id));
  const res = await call(conn.client, 'run_code', { code: 'x = 41\nx + 1' });
  assert.equal(res.structuredContent.result, '42');
  const sid = res.structuredContent.session_id;
  const stats = await call(conn.client, 'get_session_stats', { session_id: sid });
  assert.equal(stats.structuredContent.warm_start, true);
  assert.ok(ready.has(stats.structuredContent.container_id), 'the session got one of the ready sandboxes');
  // Two ready again, besides the one the session holds.
  await waitFor(async () => (await pooledContainers()).length === 3, 60000, 'the pool to refill');
  await call(conn.client, 'cleanup_session', { session_id: sid });
  await waitFor(async () => !(await pooledContainers()).some((c) => c.Id === stats.structuredContent.container_id),
    15000, 'the claimed sandbox to be destroyed, not returned');
});

test('a pooled sandbox never carries state from an earlier session', async () => {
  const first = await call(conn.client, 'run_code', { code: 'secret = "s3"\nopen("left.txt", "w").write("x")' });
  const firstId = first.structuredContent.session_id;
  const firstContainer = await sandboxContainerId(conn.client, firstId);
  await call(conn.client, 'cleanup_session', { session_id: firstId });
  const second = await call(conn.client, 'run_code', { code: 'secret' });
  const secondId = second.structuredContent.session_id;
  assert.equal(second.structuredContent.status, 'error');
  assert.match(second.structuredContent.stderr, /NameError/);
  const files = await call(conn.client, 'list_files', { session_id: secondId, path: '.' });
  assert.ok(!files.structuredContent.entries.some((e) => e.name === 'left.txt'));
  assert.notEqual(await sandboxContainerId(conn.client, secondId), firstContainer);
  await call(conn.client, 'cleanup_session', { session_id: secondId });
});

test('a session with its own environment is created cold', async () => {
  const res = await call(conn.client, 'run_code', {
    code: 'import os\nos.environ["GREETING"]', environment: { GREETING: 'hi' },
  });
  assert.equal(res.structuredContent.result, "'hi'");
  const sid = res.structuredContent.session_id;
  const stats = await call(conn.client, 'get_session_stats', { session_id: sid });
  assert.equal(stats.structuredContent.warm_start, false);
  assert.equal((await containersOfSession(sid)).length, 1, 'a cold sandbox carries its session label');
  await call(conn.client, 'cleanup_session', { session_id: sid });
});

// Output ends a moment before the result: the SDK runs notification handlers a microtask after
// it reads them but settles a response at once, so a progress notification read in the same
// chunk as the response would reach a handler that is already gone. Nothing is flushed by hand:
// stdout is block-buffered in the sandbox, yet a line printed before a sleep arrives during it,
// and stdout, stderr and a subprocess's output keep their order.
const STREAMING_CODE = [
  'import subprocess, sys, time',
  'print("first line")',
  'time.sleep(0.8)',
  'print("to stderr", file=sys.stderr)',
  'print("last line")',
  'subprocess.run(["echo", "from a subprocess"])',
  'print("after it")',
  'time.sleep(0.3)',
].join('\n');
const STREAMED_STDOUT = 'first line\nlast line\nfrom a subprocess\nafter it\n';

async function runWithProgress(client) {
  const progress = [];
  let resultAt = 0;
  const res = await client.callTool(
    { name: 'run_code', arguments: { code: STREAMING_CODE } },
    undefined,
    { onprogress: (p) => progress.push({ ...p, at: Date.now() }) },
  ).then((r) => { resultAt = Date.now(); return r; });
  return { res, progress, resultAt };
}

function assertStreamed({ res, progress, resultAt }) {
  assert.equal(res.structuredContent.stdout, STREAMED_STDOUT, 'the result has the whole output');
  // Output comes in batches (at most one notification per 50 ms), and every stderr chunk carries
  // the prefix: put the streams back together, in the order they came, before comparing. Where a
  // chunk ends is not meaningful (print() writes its text and its newline separately, and stderr
  // is unbuffered), so adjacent stderr chunks are joined.
  const prefix = '[stderr] ';
  const inOrder = progress.map((p) => (p.message.startsWith(prefix) ? `<${p.message.slice(prefix.length)}>` : p.message))
    .join('').replaceAll('><', '');
  assert.equal(inOrder, `first line\n<to stderr\n>${STREAMED_STDOUT.slice('first line\n'.length)}`);
  const first = progress.find((p) => p.message.includes('first line'));
  assert.ok(first.at <= resultAt - 500, 'the first line arrived while the code was still sleeping');
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress);
}

test('output streams as progress notifications over Streamable HTTP (SSE)', async () => {
  const run = await runWithProgress(conn.client);
  assertStreamed(run);
  await call(conn.client, 'cleanup_session', { session_id: run.res.structuredContent.session_id });
});

test('output streams as progress notifications over stdio', async () => {
  const stdio = await connectStdio();
  try {
    assertStreamed(await runWithProgress(stdio.client));
  } finally {
    await stdio.client.close();
  }
});

test('output streams as log messages once the client sets the level to info', async () => {
  const own = await connectHttp(server.url);
  const messages = [];
  own.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => messages.push(n.params));
  await own.client.setLoggingLevel('info');
  const res = await call(own.client, 'run_shell', { command: 'echo out; echo err >&2' });
  assert.equal(res.structuredContent.stdout, 'out\n');
  await waitFor(() => messages.some((m) => m.logger === 'stderr'), 5000, 'the stderr message');
  assert.ok(messages.some((m) => m.logger === 'stdout' && m.level === 'info' && m.data === 'out\n'));
  assert.ok(messages.some((m) => m.logger === 'stderr' && m.data === 'err\n'));
  await own.client.close();
});

test('a slow execution in one session does not hold up calls to other sessions', async () => {
  // Eight more sessions on the same MCP connection, made before the slow call starts.
  const others = await Promise.all(Array.from({ length: 8 }, async (_, i) =>
    (await call(conn.client, 'run_code', { code: `n = ${i}` })).structuredContent.session_id));
  const slowSession = (await call(conn.client, 'run_code', { code: 'pass' })).structuredContent.session_id;
  let slowDone = false;
  const controller = new AbortController();
  const slow = conn.client.callTool(
    { name: 'run_code', arguments: { code: 'import time\ntime.sleep(60)', session_id: slowSession } },
    undefined, { signal: controller.signal },
  ).finally(() => { slowDone = true; });
  // Ten calls in each of the others, all at once, while the slow one runs.
  await Promise.all(others.map(async (sid, i) => {
    for (let k = 0; k < 10; k++) {
      const r = await call(conn.client, 'run_code', { code: 'n', session_id: sid });
      assert.equal(r.structuredContent.result, String(i));
    }
  }));
  assert.equal(slowDone, false, 'the other sessions finished while the slow one still ran');
  controller.abort('done');
  await assert.rejects(slow);
  const after = await call(conn.client, 'run_code', { code: '1 + 1', session_id: slowSession });
  assert.equal(after.structuredContent.result, '2', 'the cancelled session serves the next call');
  for (const sid of [slowSession, ...others]) await call(conn.client, 'cleanup_session', { session_id: sid });
});

test('calls to one session run one at a time, in the order they arrive', async () => {
  // Over stdio the arrival order is the sending order (over HTTP, parallel POSTs may overtake
  // each other on the way).
  const stdio = await connectStdio();
  try {
    const sid = (await call(stdio.client, 'run_code', { code: 'log = []' })).structuredContent.session_id;
    await Promise.all(Array.from({ length: 12 }, (_, i) => call(stdio.client, 'run_code', {
      code: `import time\nlog.append(("start", ${i}))\ntime.sleep(0.02)\nlog.append(("end", ${i}))`,
      session_id: sid,
    })));
    const res = await call(stdio.client, 'run_code', {
      code: 'log == [(k, i) for i in range(12) for k in ("start", "end")]', session_id: sid,
    });
    assert.equal(res.structuredContent.result, 'True', 'no overlap, and in sending order');
  } finally {
    await stdio.client.close();
  }
});
