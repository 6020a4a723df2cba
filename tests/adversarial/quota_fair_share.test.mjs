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
import {
  connectHttp, containersOfInstance, getEndpoint, startHttpServer, stopServer, waitFor,
} from './attack_lib.mjs';

let server;
let greedy;
let polite;
let configDir;
const greedySessions = [];
let politeSession;

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
  for (let i = 0; i < 2; ++i) {
    const res = await run(greedy, { code: '1' });
    assert.equal(res.isError, false, res.content?.[0]?.text);
    greedySessions.push(res.structuredContent.session_id);
  }
  // Keep asking: every further session is refused, none is created (the warm pool is off, so the
  // server's containers are the greedy client's two sandboxes).
  const { instance_id: instanceId } = JSON.parse((await getEndpoint(server.url, '/readyz')).text);
  for (let i = 0; i < 5; ++i) {
    const res = await run(greedy, { code: '1' });
    assert.equal(res.isError, true, 'a client went past its session quota');
    assert.match(res.content[0].text, /^busy: .*sessions\.max_sessions_per_client/);
    assert.equal((await containersOfInstance(instanceId)).length, 2);
  }
  const other = await run(polite, { code: 'print(6 * 7)' });
  assert.equal(other.isError, false, other.content?.[0]?.text);
  politeSession = other.structuredContent.session_id;
  assert.equal(other.structuredContent.stdout, '42\n');
});

test('a client at its execution quota is told busy; another client still runs code', async () => {
  // The greedy client's first session runs a long execution: that client's only execution slot.
  let longDone = false;
  const long = run(greedy, { session_id: greedySessions[0], code: 'import time\ntime.sleep(8)\nprint("slept")' })
    .finally(() => { longDone = true; });
  let refused;
  await waitFor(async () => {
    refused = await run(greedy, { session_id: greedySessions[1], code: '1' });
    return refused.isError;
  }, 5000, 'the greedy client to hold its execution slot');
  assert.match(refused.content[0].text, /^busy: .*execution\.max_concurrent_per_client/);
  const other = await run(polite, { session_id: politeSession, code: 'print("still here")' });
  assert.equal(other.isError, false, other.content?.[0]?.text);
  assert.equal(other.structuredContent.stdout, 'still here\n');
  assert.equal(longDone, false, 'the second client had to wait for the first one');
  const done = await long;
  assert.equal(done.structuredContent.stdout, 'slept\n');
  // The slot came back.
  const again = await run(greedy, { session_id: greedySessions[1], code: 'print(1)' });
  assert.equal(again.isError, false, again.content?.[0]?.text);
});
