// JavaScript sessions end to end: the official MCP TypeScript client, the real server, dockerd and
// runsc, the default image's Node.js.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connectStdio } from './harness.mjs';
import { call } from './flow.mjs';

let conn;
before(async () => {
  conn = await connectStdio();
});
after(async () => {
  await conn?.client.close();
});

async function js(code, sessionId, extra = {}) {
  const args = { language: 'javascript', code, ...extra };
  if (sessionId) args.session_id = sessionId;
  return call(conn.client, 'run_code', args);
}

test('run_code advertises javascript as a language', async () => {
  const { tools } = await conn.client.listTools();
  const runCode = tools.find((t) => t.name === 'run_code');
  assert.deepEqual(runCode.inputSchema.properties.language.enum, ['python', 'javascript']);
});

test('JavaScript state persists across calls; the last expression is the result', async () => {
  const first = await js('const greeting = "hi";\nfunction shout(s) { return s.toUpperCase() + "!" }');
  assert.equal(first.isError, false, JSON.stringify(first));
  assert.equal(first.structuredContent.status, 'success');
  assert.equal(first.structuredContent.result, null);
  const sid = first.structuredContent.session_id;

  const second = await js('shout(greeting)', sid);
  assert.equal(second.structuredContent.result, "'HI!'");
  assert.equal(second.structuredContent.session_created, false);

  const logged = await js('console.log("n =", [1, 2, 3].map((n) => n * 2)); console.error("careful")', sid);
  assert.equal(logged.structuredContent.stdout, 'n = [ 2, 4, 6 ]\n');
  assert.equal(logged.structuredContent.stderr, 'careful\n');

  const awaited = await js('const v = await new Promise((r) => setTimeout(() => r(21), 10));\nv * 2', sid);
  assert.equal(awaited.structuredContent.result, '42');
  // A cell that declares a name again runs, as in a notebook.
  assert.equal((await js('const v = 1; v', sid)).structuredContent.result, '1');

  const failed = await js('JSON.parse("{")', sid);
  assert.equal(failed.structuredContent.status, 'error');
  assert.equal(failed.structuredContent.exit_code, 1);
  assert.match(failed.structuredContent.stderr, /^SyntaxError: .*JSON/);
  assert.match(failed.structuredContent.stderr, /at <cell \d+>/);
  assert.equal((await js('greeting', sid)).structuredContent.result, "'hi'", 'state survives an error');
  await call(conn.client, 'cleanup_session', { session_id: sid });
});

test('a JavaScript timeout interrupts an endless loop and the session keeps its state', async () => {
  const first = await js('var count = 0');
  const sid = first.structuredContent.session_id;
  const started = Date.now();
  const looped = await js('while (true) { count++ }', sid, { timeout: 2 });
  assert.equal(looped.structuredContent.status, 'timeout', JSON.stringify(looped.structuredContent));
  assert.equal(looped.structuredContent.exit_code, 124);
  assert.equal(looped.structuredContent.state_lost, false);
  assert.match(looped.structuredContent.stderr, /\[sandbox\] execution exceeded 2\.0 s/);
  assert.ok(Date.now() - started < 10000);
  assert.equal((await js('count > 0', sid)).structuredContent.result, 'true');
  await call(conn.client, 'cleanup_session', { session_id: sid });
});

test('cancelling a JavaScript run stops it and the state survives', async () => {
  const first = await js('var kept = "yes"');
  const sid = first.structuredContent.session_id;
  const controller = new AbortController();
  const pending = conn.client.callTool(
    { name: 'run_code', arguments: { language: 'javascript', code: 'for (;;) {}', session_id: sid } },
    undefined, { signal: controller.signal },
  );
  setTimeout(() => controller.abort('test cancels'), 1000);
  await assert.rejects(pending);
  const next = await js('kept', sid);
  assert.equal(next.structuredContent.result, "'yes'");
  assert.equal(next.structuredContent.state_lost, false);
  await call(conn.client, 'cleanup_session', { session_id: sid });
});

test('JavaScript, Python and shell share one sandbox and its files', async () => {
  const py = await call(conn.client, 'run_code', {
    code: "import pandas as pd\npd.DataFrame({'n': [1, 2, 3]}).to_csv('nums.csv', index=False)",
  });
  assert.equal(py.structuredContent.status, 'success', py.structuredContent.stderr);
  const sid = py.structuredContent.session_id;
  const read = await js(
    "const fs = require('fs');\n" +
      "const rows = fs.readFileSync('nums.csv', 'utf8').trim().split('\\n').slice(1).map(Number);\n" +
      "fs.writeFileSync('/tmp/sum.json', JSON.stringify({ sum: rows.reduce((a, b) => a + b) }));\n" +
      '[process.cwd(), rows]',
    sid,
  );
  assert.equal(read.structuredContent.result, "[ '/workspace', [ 1, 2, 3 ] ]");
  const back = await call(conn.client, 'run_code', {
    code: "import json\njson.load(open('/tmp/sum.json'))['sum']", session_id: sid,
  });
  assert.equal(back.structuredContent.result, '6');
  const who = await call(conn.client, 'run_shell', {
    command: 'cat /tmp/sum.json; echo; ps -o user=,comm= -e | grep -c node', session_id: sid,
  });
  assert.equal(who.structuredContent.stdout, '{"sum":6}\n1\n');
  // Same unprivileged user as Python.
  const uid = await js('process.getuid()', sid);
  const pyUid = await call(conn.client, 'run_code', { code: 'import os\nos.getuid()', session_id: sid });
  assert.equal(uid.structuredContent.result, pyUid.structuredContent.result);
  assert.equal(uid.structuredContent.result, '65534');
  await call(conn.client, 'cleanup_session', { session_id: sid });
});

test('an unknown language is refused with the allowed values', async () => {
  const bad = await call(conn.client, 'run_code', { code: '1', language: 'ruby' });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /javascript/);
});
