// Attack: one client takes every session (or every execution slot) of the server so that no other
// client can work. Must hold: each client (an MCP session: here one Mcp-Session-Id each) has its
// own quota (sessions.max_sessions_per_client, execution.max_concurrent_per_client); past it the
// greedy client gets a "busy:" error naming the limit, while a second client keeps creating
// sessions and running code. The global limits still hold.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectHttp, containersOfSession, startHttpServer, stopServer, waitFor } from './attack_lib.mjs';

let server;
let greedy;
let polite;
let configDir;

before(async () => {
  configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quota-'));
  const file = path.join(configDir, 'config.json');
  fs.writeFileSync(file, JSON.stringify({
    pool: { size: 0 },
    sessions: { max_sessions: 6, max_sessions_per_client: 2 },
    execution: { max_concurrent: 6, max_concurrent_per_client: 1 },
  }));
  server = await startHttpServer(['--config', file]);
  greedy = (await connectHttp(server.url)).client;
  polite = (await connectHttp(server.url)).client;
});

after(async () => {
  await greedy?.close();
  await polite?.close();
  if (server) await stopServer(server);
  fs.rmSync(configDir, { recursive: true, force: true });
});

const run = (client, args) => client.callTool({ name: 'run_code', arguments: args });

test('a client at its session quota is told busy; another client still gets sessions', async () => {
  for (const id of ['greedy-1', 'greedy-2']) {
    const res = await run(greedy, { session_id: id, code: '1' });
    assert.equal(res.isError, false, res.content?.[0]?.text);
  }
  // Keep asking: every further session is refused, none is created.
  for (let i = 0; i < 5; ++i) {
    const res = await run(greedy, { session_id: `greedy-extra-${i}`, code: '1' });
    assert.equal(res.isError, true, 'a client went past its session quota');
    assert.match(res.content[0].text, /^busy: .*sessions\.max_sessions_per_client/);
    assert.equal((await containersOfSession(`greedy-extra-${i}`)).length, 0);
  }
  const other = await run(polite, { session_id: 'polite-1', code: 'print(6 * 7)' });
  assert.equal(other.isError, false, other.content?.[0]?.text);
  assert.equal(other.structuredContent.stdout, '42\n');
});

test('a client at its execution quota is told busy; another client still runs code', async () => {
  // greedy-1 runs a long execution: the greedy client's only execution slot.
  let longDone = false;
  const long = run(greedy, { session_id: 'greedy-1', code: 'import time\ntime.sleep(8)\nprint("slept")' })
    .finally(() => { longDone = true; });
  let refused;
  await waitFor(async () => {
    refused = await run(greedy, { session_id: 'greedy-2', code: '1' });
    return refused.isError;
  }, 5000, 'the greedy client to hold its execution slot');
  assert.match(refused.content[0].text, /^busy: .*execution\.max_concurrent_per_client/);
  const other = await run(polite, { session_id: 'polite-1', code: 'print("still here")' });
  assert.equal(other.isError, false, other.content?.[0]?.text);
  assert.equal(other.structuredContent.stdout, 'still here\n');
  assert.equal(longDone, false, 'the second client had to wait for the first one');
  const done = await long;
  assert.equal(done.structuredContent.stdout, 'slept\n');
  // The slot came back.
  const again = await run(greedy, { session_id: 'greedy-2', code: 'print(1)' });
  assert.equal(again.isError, false, again.content?.[0]?.text);
});
