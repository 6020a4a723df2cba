// The seed's examples as one flow, run over any connected client (stdio or HTTP).
import assert from 'node:assert/strict';
import { containersOfSession, EXPECTED_TOOLS, waitFor } from './harness.mjs';

export async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}

export async function assertToolList(client) {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...EXPECTED_TOOLS].sort());
  for (const tool of tools) {
    assert.equal(tool.inputSchema.type, 'object', tool.name);
    assert.equal(tool.outputSchema.type, 'object', tool.name);
  }
}

export async function seedFlow(client) {
  const first = await call(client, 'run_code', { code: 'x = 42' });
  assert.equal(first.isError, false, JSON.stringify(first));
  const sid = first.structuredContent.session_id;
  assert.match(sid, /^s-[0-9a-f]{32}(~[A-Za-z0-9._-]+)?$/, 'a minted handle holds 128 random bits');
  assert.equal(first.structuredContent.session_created, true);

  const second = await call(client, 'run_code', { code: 'print(x * 2)', session_id: sid });
  assert.equal(second.structuredContent.stdout, '84\n');
  assert.equal(second.structuredContent.status, 'success');
  assert.equal(second.structuredContent.exit_code, 0);
  assert.match(second.content[0].text, /84/);

  const expr = await call(client, 'run_code', { code: 'y = x + 1\ny * 2', session_id: sid });
  assert.equal(expr.structuredContent.result, '86');

  await call(client, 'run_shell', { command: "echo 'data' > /tmp/file.txt", session_id: sid });
  const shared = await call(client, 'run_code', {
    code: "print(open('/tmp/file.txt').read(), end='')", session_id: sid,
  });
  assert.equal(shared.structuredContent.stdout, 'data\n');

  const up = await call(client, 'upload_file', {
    path: '/tmp/data.csv', content: 'name,value\nAlice,100\nBob,200\n', session_id: sid,
  });
  assert.equal(up.isError, false, JSON.stringify(up));
  assert.equal(up.structuredContent.size, 29);
  const csv = await call(client, 'run_code', {
    code: "import csv\nrows = list(csv.DictReader(open('/tmp/data.csv')))\nsum(int(r['value']) for r in rows)",
    session_id: sid,
  });
  assert.equal(csv.structuredContent.result, '300');

  const binary = Buffer.from([0, 1, 2, 255, 254]).toString('base64');
  await call(client, 'upload_file', { path: 'blob.bin', content: binary, encoding: 'base64', session_id: sid });
  const down = await call(client, 'download_file', { path: 'blob.bin', session_id: sid });
  assert.equal(down.structuredContent.encoding, 'base64');
  assert.equal(down.structuredContent.content, binary);
  const listing = await call(client, 'list_files', { session_id: sid });
  assert.ok(listing.structuredContent.entries.some((e) => e.name === 'blob.bin' && e.size === 5));

  const stats = await call(client, 'get_session_stats', { session_id: sid });
  assert.equal(stats.structuredContent.execution_count, 6);
  assert.equal(stats.structuredContent.runtime, 'runsc');
  assert.equal(stats.structuredContent.container_status, 'running');
  assert.ok(stats.structuredContent.uptime > 0);

  // A session that took a pooled sandbox has no session label on it: name its container.
  const own = [stats.structuredContent.container_id];
  assert.equal((await containersOfSession(sid, own)).length, 1);
  const cleanup = await call(client, 'cleanup_session', { session_id: sid });
  assert.equal(cleanup.structuredContent.status, 'success');
  await waitFor(async () => (await containersOfSession(sid, own)).length === 0, 10000,
    'container removal');
  const gone = await call(client, 'get_session_stats', { session_id: sid });
  assert.equal(gone.isError, true);
  assert.ok(gone.content[0].text.startsWith(`Session '${sid}' has ended (cleanup_session ended it)`),
    gone.content[0].text);
}

export async function badInputFlow(client) {
  const unknown = await call(client, 'upload_file', { path: 'a', content: 'b', session_id: 'nope' });
  assert.equal(unknown.isError, true);
  assert.match(unknown.content[0].text, /Unknown session 'nope'.*run_code/);

  const invalid = await call(client, 'run_code', { code: 'print(1)', timeout: 'soon' });
  assert.equal(invalid.isError, true);
  assert.match(invalid.content[0].text, /arguments\.timeout: must be an integer/);

  await assert.rejects(call(client, 'no_such_tool', {}), (err) => err.code === -32602);

  // The server keeps serving after all of that.
  const ok = await call(client, 'run_code', { code: '6 * 7' });
  assert.equal(ok.structuredContent.result, '42');
  await call(client, 'cleanup_session', { session_id: ok.structuredContent.session_id });
}
