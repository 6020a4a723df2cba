// End to end over stdio with the official MCP TypeScript client.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connectStdio } from './harness.mjs';
import { assertToolList, badInputFlow, call, seedFlow } from './flow.mjs';

let conn;
before(async () => {
  conn = await connectStdio();
});
after(async () => {
  await conn?.client.close();
});

test('initialize negotiates the latest protocol and names the server', () => {
  const info = conn.client.getServerVersion();
  assert.equal(info.name, 'sandbox-mcp');
  assert.ok(conn.client.getServerCapabilities().tools);
});

test('tools/list publishes every tool with input and output schemas', async () => {
  await assertToolList(conn.client);
});

test('seed flow: state, shared files, upload, stats, cleanup', async () => {
  await seedFlow(conn.client);
});

test('results carry a timing breakdown whose parts nest', async () => {
  const first = await conn.client.callTool({ name: 'run_code', arguments: { code: '1+1' } });
  const session_id = first.structuredContent.session_id;
  for (let i = 0; i < 3; i++) {
    const started = process.hrtime.bigint();
    const result = await conn.client.callTool({ name: 'run_code', arguments: { code: 'sum(range(10**5))', session_id } });
    const clientMs = Number(process.hrtime.bigint() - started) / 1e6;
    const t = result._meta?.['sandbox-mcp/timing'];
    assert.ok(t, `no _meta timing in ${JSON.stringify(result).slice(0, 300)}`);
    // Each interval lies inside the next: the code, the agent, the channel, the server, the client.
    assert.ok(t.exec_ms > 0 && t.exec_ms <= t.agent_ms, JSON.stringify(t));
    assert.ok(t.agent_ms <= t.channel_ms && t.channel_ms <= t.server_ms, JSON.stringify(t));
    assert.ok(t.server_ms <= clientMs, `${JSON.stringify(t)} vs ${clientMs} ms on the client`);
  }
  const listed = await conn.client.callTool({ name: 'list_sessions', arguments: {} });
  assert.ok(listed._meta['sandbox-mcp/timing'].server_ms >= 0, 'every tool call reports server_ms');
});

test('bad input gets clear errors and the server keeps serving', async () => {
  await badInputFlow(conn.client);
});

test('cancelling a request stops the execution and the session stays usable', async () => {
  const first = await call(conn.client, 'run_code', { code: 'n = 1' });
  const sid = first.structuredContent.session_id;
  const controller = new AbortController();
  const started = Date.now();
  const pending = conn.client.callTool(
    { name: 'run_code', arguments: { code: 'import time\ntime.sleep(60)', session_id: sid } },
    undefined, { signal: controller.signal },
  );
  setTimeout(() => controller.abort('test cancels'), 1500);
  await assert.rejects(pending);
  // The next call in the same session runs promptly and the state survived.
  const next = await call(conn.client, 'run_code', { code: 'n + 1', session_id: sid });
  assert.equal(next.structuredContent.result, '2');
  assert.ok(Date.now() - started < 20000, 'cancelled execution kept the session busy');
  await call(conn.client, 'cleanup_session', { session_id: sid });
});

test('closing stdin ends the server and removes its sandboxes', async () => {
  const own = await connectStdio();
  const res = await call(own.client, 'run_code', { code: '1' });
  const sid = res.structuredContent.session_id;
  const { containersOfSession, sandboxContainerId, waitFor } = await import('./harness.mjs');
  const ids = [await sandboxContainerId(own.client, sid)];
  assert.equal((await containersOfSession(sid, ids)).length, 1);
  await own.client.close();
  await waitFor(async () => (await containersOfSession(sid, ids)).length === 0, 15000, 'sandbox removal');
});

test('SIGTERM over stdio: the running execution finishes, then the input ends mid-drain cleanly', async () => {
  const own = await connectStdio();
  const pid = own.transport.pid;
  const child = own.transport._process; // the SDK's spawned server (no public accessor)
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const first = await call(own.client, 'run_code', { code: '1+1' });
  const session_id = first.structuredContent.session_id;
  let begun;
  const started = new Promise((resolve) => { begun = resolve; });
  const running = own.client.callTool(
    { name: 'run_code', arguments: { code: 'import time\nprint("a", flush=True)\ntime.sleep(2)\nprint("b")', session_id } },
    undefined, { onprogress: () => begun(), timeout: 60000 });
  await started;
  process.kill(pid, 'SIGTERM'); // a drain: the execution may finish
  const result = await running;
  assert.equal(result.structuredContent.status, 'success', JSON.stringify(result));
  assert.match(result.structuredContent.stdout, /a\nb/);
  // The client goes away while the server may still be draining: it must end cleanly (exit 0,
  // no crash report), however the two race.
  await own.client.close();
  const { code, signal } = await exited;
  assert.equal(signal, null, `ended by ${signal}; stderr: ${own.stderr.join('').slice(-2000)}`);
  assert.equal(code, 0, own.stderr.join('').slice(-2000));
  assert.doesNotMatch(own.stderr.join(''), /runtime error|AddressSanitizer|terminate called/);
});
