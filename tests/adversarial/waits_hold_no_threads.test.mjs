// Attack: requests that wait (tasks/result on a running task, resources/read of a session whose
// image is still being built, tools/call behind a running task) sent by the hundred, to take every
// request thread of the server so that other clients freeze. Must hold: a request that waits holds
// no worker thread, so another client's initialize and tools/call are answered at once; waits end
// when their connection closes; one MCP session has at most http.max_requests_in_flight_per_session
// requests in flight (past it: 429 with a JSON-RPC error saying so); the waits still get their
// answers when what they wait for happens.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  assertNoLeaks, connectHttp, containersOfSession, dockerRequest, snapshot, startHttpServer, stopServer,
  waitFor,
} from './attack_lib.mjs';
import { rawMcp } from './raw_mcp.mjs';

const WAITS_PER_SESSION = 64; // the per-session bound (64); 3 sessions: past the old 80 threads

let server;
let configDir;
let baseline;
let post;
let rpc;
let openSession;

before(async () => {
  baseline = await snapshot();
  configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waits-'));
  const file = path.join(configDir, 'config.json');
  fs.writeFileSync(file, JSON.stringify({
    pool: { size: 1, preload_python: [] },
    sandbox: { allow_dockerfile: true },
    http: { max_connections: 2000, max_connections_per_address: 2000 },
  }));
  server = await startHttpServer(['--config', file]);
  ({ post, rpc, openSession } = rawMcp(server.url));
});

after(async () => {
  if (server) await stopServer(server);
  fs.rmSync(configDir, { recursive: true, force: true });
  await assertNoLeaks(baseline);
});

// A new sandbox session of MCP session `sessionId`, made by a plain call; resolves with its id
// (a task or a read aimed at it needs the id up front).
async function newSandbox(sessionId) {
  const res = await post(sessionId, rpc('tools/call', { name: 'run_code', arguments: { code: '1' } })).done;
  const id = res.messages.at(-1).result?.structuredContent?.session_id;
  assert.ok(id, JSON.stringify(res.messages));
  return id;
}

// A task that runs until tasks/cancel (or 120 s); resolves with its taskId.
async function startLongTask(sessionId, sandboxId) {
  const res = await post(sessionId, rpc('tools/call', {
    name: 'run_code', task: {},
    arguments: { session_id: sandboxId, code: 'import time\ntime.sleep(120)', timeout: 150 },
  })).done;
  const task = res.messages.at(-1).result.task;
  assert.ok(task?.taskId, JSON.stringify(res.messages));
  return task.taskId;
}

// How long an honest client waits for initialize and a run_code while the attack goes on.
async function victimRoundTrip() {
  const started = Date.now();
  const { client } = await connectHttp(server.url);
  const res = await client.callTool({ name: 'run_code', arguments: { code: 'print(6 * 7)' } });
  assert.equal(res.isError, false, res.content?.[0]?.text);
  assert.equal(res.structuredContent.stdout, '42\n');
  await client.callTool({ name: 'cleanup_session', arguments: { session_id: res.structuredContent.session_id } });
  await client.close();
  return Date.now() - started;
}

test('hundreds of waiting tasks/result hold no threads; waits end with their connection', async () => {
  const attackers = [];
  for (let i = 0; i < 3; ++i) {
    const sessionId = await openSession();
    const sandbox = await newSandbox(sessionId);
    attackers.push({ sessionId, sandbox, taskId: await startLongTask(sessionId, sandbox) });
  }
  // Every task is running (its sandbox exists) before the flood.
  for (const a of attackers) {
    await waitFor(async () => {
      const res = await post(a.sessionId, rpc('tasks/get', { taskId: a.taskId })).done;
      return res.messages[0].result.status === 'working';
    }, 30000, 'the task to run');
  }
  const waits = attackers.flatMap((a) => Array.from({ length: WAITS_PER_SESSION }, () => {
    const message = rpc('tasks/result', { taskId: a.taskId });
    return { ...post(a.sessionId, message), id: message.id, sessionId: a.sessionId };
  }));
  await new Promise((resolve) => setTimeout(resolve, 1000)); // every wait is parked by now

  // The per-session bound: one more request of a flooding session is refused at once, with why.
  const over = await post(attackers[0].sessionId, rpc('tools/list', {})).done;
  assert.equal(over.status, 429);
  assert.match(over.messages[0].error.message, /http\.max_requests_in_flight_per_session/);
  // ... but its cancellations still get through (notifications always pass).
  const note = await post(attackers[0].sessionId,
    { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'x', progress: 1 } }).done;
  assert.equal(note.status, 202);

  const ms = await victimRoundTrip();
  assert.ok(ms < 20000, `another client waited ${ms} ms behind the waiting requests`);

  // Closing the waiting connections ends their waits: the session has room again.
  for (const w of waits.slice(0, WAITS_PER_SESSION)) w.abort();
  await Promise.allSettled(waits.slice(0, WAITS_PER_SESSION).map((w) => w.done));
  await waitFor(async () => {
    const res = await post(attackers[0].sessionId, rpc('tools/list', {})).done;
    return res.status === 200;
  }, 5000, 'the aborted waits to leave the session\'s requests in flight');

  // A client's cancellation reaches a parked wait (notifications pass the bound): it is answered
  // with an error saying the task goes on, and its place is free.
  const cancelledWaits = [];
  for (const a of attackers.slice(1)) {
    const wait = waits.find((w) => w.sessionId === a.sessionId);
    cancelledWaits.push(wait);
    await post(a.sessionId, { jsonrpc: '2.0', method: 'notifications/cancelled',
      params: { requestId: wait.id, reason: 'test' } }).done;
    const answer = (await wait.done).messages.at(-1);
    assert.match(answer.error?.message ?? '', /cancelled before task .* finished; the task keeps running/);
  }
  // The waits still open get the task's outcome when it ends.
  for (const a of attackers) {
    const res = await post(a.sessionId, rpc('tasks/cancel', { taskId: a.taskId })).done;
    assert.equal(res.messages[0].result.status, 'cancelled');
  }
  const open = waits.slice(WAITS_PER_SESSION).filter((w) => !cancelledWaits.includes(w));
  const answered = await Promise.all(open.map((w) => w.done));
  for (const res of answered) {
    const last = res.messages.at(-1);
    assert.ok(last.result, JSON.stringify(last));
    assert.ok(last.result._meta['io.modelcontextprotocol/related-task'].taskId);
  }
  for (const a of attackers) {
    await post(a.sessionId, rpc('tools/call', { name: 'cleanup_session', arguments: { session_id: a.sandbox } })).done;
  }
});

test('a tools/call behind a running task and reads of a session still building hold no threads', async () => {
  const sessionId = await openSession();
  const busy = await newSandbox(sessionId);
  const taskId = await startLongTask(sessionId, busy);
  await waitFor(async () => {
    const res = await post(sessionId, rpc('tasks/get', { taskId })).done;
    return res.messages[0].result.status === 'working';
  }, 30000, 'the task to run');
  // Behind the task: parked until it ends.
  const behind = post(sessionId, rpc('tools/call', {
    name: 'run_code', arguments: { session_id: busy, code: 'print("after the task")' },
  }));
  // A session whose image build takes a while, and reads of it from other MCP sessions' worth of
  // requests: answered at once ("still starting"), not parked on a thread. A session id is known
  // before its sandbox exists only when its sandbox was lost: the call after that starts a fresh
  // one under the same id, here from a slow build.
  const builder = await openSession();
  const slowBuild = await newSandbox(builder);
  const killed = (await post(builder, rpc('tools/call', {
    name: 'get_session_stats', arguments: { session_id: slowBuild },
  })).done).messages.at(-1).result.structuredContent.container_id;
  await dockerRequest('POST', `/containers/${killed}/kill`);
  await waitFor(async () => (await containersOfSession(slowBuild, [killed])).length === 0, 20000,
    'the killed sandbox to go');
  const buildRequest = rpc('tools/call', {
    name: 'run_shell',
    arguments: { session_id: slowBuild, command: 'true',
      dockerfile: 'FROM sandbox-mcp/python:latest\nRUN sleep 25\n' },
  });
  const build = post(builder, buildRequest);
  await new Promise((resolve) => setTimeout(resolve, 2000)); // the build is under way
  const reads = [];
  for (let i = 0; i < 2; ++i) {
    const reader = i === 0 ? builder : await openSession();
    for (let j = 0; j < 60; ++j) reads.push(post(reader, rpc('resources/read', { uri: `sandbox://${slowBuild}/x` })).done);
  }
  const readAnswers = await Promise.all(reads);
  const starting = readAnswers.filter((r) => /still starting/.test(r.messages[0]?.error?.message ?? ''));
  assert.ok(starting.length >= 60, `reads of the building session: ${JSON.stringify(readAnswers[0])}`);
  const ms = await victimRoundTrip();
  assert.ok(ms < 20000, `another client waited ${ms} ms`);

  const cancelled = await post(sessionId, rpc('tasks/cancel', { taskId })).done;
  assert.equal(cancelled.messages[0].result.status, 'cancelled');
  const ran = (await behind.done).messages.at(-1);
  assert.equal(ran.result.structuredContent.stdout, 'after the task\n', JSON.stringify(ran));
  await post(builder, { jsonrpc: '2.0', method: 'notifications/cancelled',
    params: { requestId: buildRequest.id, reason: 'test over' } }).done;
  await build.done;
  await post(sessionId, rpc('tools/call', { name: 'cleanup_session', arguments: { session_id: busy } })).done;
});
