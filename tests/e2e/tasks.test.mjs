// MCP tasks end to end, over stdio and Streamable HTTP, with the official TypeScript client's
// task API (client.experimental.tasks): a task-augmented run outlives a short request timeout,
// tasks/get, tasks/list, tasks/result and tasks/cancel work, progress arrives, and another client
// sees nothing of it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { connectHttp, connectStdio, startHttpServer, stopServer, waitFor } from './harness.mjs';
import { call } from './flow.mjs';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';

// Runs a task-augmented tools/call to its end; returns every message the SDK's stream yielded.
async function runAsTask(client, name, args, options = {}) {
  const messages = [];
  const stream = client.experimental.tasks.callToolStream(
    { name, arguments: args }, CallToolResultSchema, { task: { ttl: 60000 }, ...options });
  for await (const message of stream) messages.push(message);
  return messages;
}

// Starts a task and returns its id as soon as the server has answered with the task.
async function startTask(client, name, args) {
  const stream = client.experimental.tasks.callToolStream(
    { name, arguments: args }, CallToolResultSchema, { task: {} });
  const { value } = await stream.next();
  await stream.return();
  assert.equal(value.type, 'taskCreated', JSON.stringify(value));
  return value.task.taskId;
}

async function rejectsWithCode(promise, code) {
  await assert.rejects(promise, (error) => error instanceof McpError && error.code === code);
}

function taskScenarios(connect) {
  let conn;
  before(async () => {
    conn = await connect();
    await conn.client.listTools();  // the client learns which tools take tasks
  });
  after(async () => {
    await conn?.client.close();
  });

  test('the server declares tasks and which tools take them', async () => {
    const caps = conn.client.getServerCapabilities();
    assert.ok(caps.tasks?.requests?.tools?.call, JSON.stringify(caps));
    assert.ok(caps.tasks.list && caps.tasks.cancel);
    const { tools } = await conn.client.listTools();
    for (const tool of tools) {
      const expected = ['run_code', 'run_shell'].includes(tool.name) ? 'optional' : 'forbidden';
      assert.equal(tool.execution?.taskSupport, expected, tool.name);
    }
  });

  test('a task outlives a 2 s client timeout and its result is fetched', async () => {
    // Without a task the same call times out on the client...
    await rejectsWithCode(
      conn.client.callTool({ name: 'run_shell', arguments: { command: 'sleep 5' } }, undefined,
        { timeout: 2000 }),
      -32001);
    // ...as a task it answers at once, is polled while it works, and delivers its result.
    const messages = await runAsTask(conn.client, 'run_shell',
      { command: 'sleep 5; echo done', timeout: 30 }, { timeout: 2000 });
    const types = messages.map((m) => m.type);
    assert.equal(types[0], 'taskCreated', JSON.stringify(messages));
    assert.equal(types.at(-1), 'result', JSON.stringify(messages.at(-1)));
    const statuses = messages.filter((m) => m.type === 'taskStatus').map((m) => m.task.status);
    assert.equal(statuses[0], 'working');
    assert.equal(statuses.at(-1), 'completed');
    const { result } = messages.at(-1);
    assert.equal(result.isError, false);
    assert.equal(result.structuredContent.stdout, 'done\n');
    assert.equal(result._meta[RELATED_TASK].taskId, messages[0].task.taskId);

    const taskId = messages[0].task.taskId;
    const task = await conn.client.experimental.tasks.getTask(taskId);
    assert.equal(task.status, 'completed');
    assert.match(task.createdAt, /^\d{4}-\d\d-\d\dT/);
    const { tasks } = await conn.client.experimental.tasks.listTasks();
    assert.ok(tasks.some((t) => t.taskId === taskId), JSON.stringify(tasks));
    // The result stays available for the task's ttl.
    const again = await conn.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    assert.equal(again.structuredContent.stdout, 'done\n');
  });

  test('tasks/cancel stops a running sleep 60 and the session survives', async () => {
    const first = await call(conn.client, 'run_shell', { command: 'echo ready > /tmp/mark' });
    const sid = first.structuredContent.session_id;
    const started = Date.now();
    const taskId = await startTask(conn.client, 'run_shell',
      { command: 'sleep 60', session_id: sid, timeout: 120 });
    assert.equal((await conn.client.experimental.tasks.getTask(taskId)).status, 'working');
    await new Promise((r) => setTimeout(r, 500));
    const cancelled = await conn.client.experimental.tasks.cancelTask(taskId);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal((await conn.client.experimental.tasks.getTask(taskId)).status, 'cancelled');
    await rejectsWithCode(conn.client.experimental.tasks.cancelTask(taskId), -32602);
    // The session's next call runs at once: the sleep was stopped, not waited for.
    const next = await call(conn.client, 'run_shell', { command: 'cat /tmp/mark', session_id: sid });
    assert.equal(next.structuredContent.stdout, 'ready\n');
    assert.ok(Date.now() - started < 20000, `took ${Date.now() - started} ms`);
    await call(conn.client, 'cleanup_session', { session_id: sid });
  });

  test('progress notifications arrive for a task, tagged with it', async () => {
    const progress = [];
    const messages = await runAsTask(conn.client, 'run_shell',
      { command: 'echo one; sleep 1; echo two' }, { onprogress: (p) => progress.push(p) });
    assert.equal(messages.at(-1).type, 'result', JSON.stringify(messages.at(-1)));
    const taskId = messages[0].task.taskId;
    await waitFor(() => progress.map((p) => p.message).join('').includes('two'), 5000,
      `progress (got ${JSON.stringify(progress)})`);
    assert.equal(progress.map((p) => p.message).join(''), 'one\ntwo\n');
    for (const p of progress) assert.equal(p._meta?.[RELATED_TASK]?.taskId, taskId);
  });

  test('unknown task ids get -32602 and plain calls are unchanged', async () => {
    await rejectsWithCode(conn.client.experimental.tasks.getTask('no-such-task'), -32602);
    await rejectsWithCode(
      conn.client.experimental.tasks.getTaskResult('no-such-task', CallToolResultSchema), -32602);
    const plain = await call(conn.client, 'run_code', { code: '1 + 1' });
    assert.equal(plain.structuredContent.result, '2');
    assert.equal(plain.task, undefined);
    await call(conn.client, 'cleanup_session', { session_id: plain.structuredContent.session_id });
  });
}

describe('tasks over stdio', () => {
  taskScenarios(() => connectStdio());
});

describe('tasks over Streamable HTTP', () => {
  let server;
  before(async () => {
    server = await startHttpServer();
  });
  after(async () => {
    assert.equal(await stopServer(server), 0, server.logText());
  });

  taskScenarios(() => connectHttp(server.url));

  // Over stdio each client has a server process of its own; over HTTP clients share one.
  test("a second client can neither get, read, cancel nor list the first client's task", async () => {
    const a = await connectHttp(server.url);
    const b = await connectHttp(server.url);
    await a.client.listTools();
    const taskId = await startTask(a.client, 'run_shell', { command: 'sleep 30' });
    const theirs = b.client.experimental.tasks;
    await rejectsWithCode(theirs.getTask(taskId), -32602);
    await rejectsWithCode(theirs.getTaskResult(taskId, CallToolResultSchema), -32602);
    await rejectsWithCode(theirs.cancelTask(taskId), -32602);
    assert.deepEqual((await theirs.listTasks()).tasks, []);
    assert.equal((await a.client.experimental.tasks.getTask(taskId)).status, 'working');
    await a.client.experimental.tasks.cancelTask(taskId);
    await a.client.close();
    await b.client.close();
  });

  test('ending the connection cancels its running task and frees its sandbox', async () => {
    const { client, transport } = await connectHttp(server.url);
    await client.listTools();
    const first = await call(client, 'run_shell', { command: 'true' });
    const sid = first.structuredContent.session_id;
    const { containersOfSession, sandboxContainerId } = await import('./harness.mjs');
    const ids = [await sandboxContainerId(client, sid)];
    await startTask(client, 'run_shell', { command: 'sleep 60', session_id: sid });
    await transport.terminateSession();  // DELETE: the server closes the MCP session
    await client.close();
    await waitFor(async () => (await containersOfSession(sid, ids)).length === 0, 20000,
      'sandbox removal');
  });
});
