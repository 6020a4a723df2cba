// A sandbox killed from outside (`docker kill`, as the OOM killer or an operator would): the
// session must say its sandbox was lost, never hand out a silently empty sandbox under the old
// id; the server keeps answering, other sessions keep their state, and no container is left.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { connectStdio, containersOfSession, sandboxContainerId, waitFor } from './attack_lib.mjs';

const run = promisify(execFile);
let conn;
before(async () => {
  conn = await connectStdio();
});
after(async () => {
  await conn?.client.close();
});

function call(name, args) {
  return conn.client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
}

async function runCode(sid, code) {
  const res = await call('run_code', { code, session_id: sid });
  assert.ok(!res.isError, `run_code failed: ${JSON.stringify(res.content)}`);
  return res.structuredContent;
}

function text(res) {
  return res.content.map((c) => c.text ?? '').join('\n');
}

// The first call after the kill may fail (the loss was noticed during it) and must then say so;
// the call that runs must report state_lost with a warning, and the old variables are gone.
async function expectLostThenFresh(sid, firstCall) {
  let res = await firstCall();
  if (res.isError) {
    assert.match(text(res), /lost/i, `the failing call does not say the sandbox was lost: ${text(res)}`);
    res = await call('run_code', { code: "'x' in globals()", session_id: sid });
  }
  assert.ok(!res.isError, text(res));
  const s = res.structuredContent;
  assert.equal(s.session_id, sid);
  assert.equal(s.state_lost, true, 'a replaced sandbox must say state_lost');
  assert.ok((s.warnings ?? []).some((w) => /was lost/.test(w) && /files are gone/.test(w)),
    `no warning about the lost sandbox: ${JSON.stringify(s.warnings)}`);
  return s;
}

test('docker kill of a sandbox: state_lost and a warning, others unaffected, nothing leaks', async () => {
  const victim = (await runCode(undefined, 'x = 1')).session_id;
  const bystander = (await runCode(undefined, 'y = 2')).session_id;
  const killedId = await sandboxContainerId(conn.client, victim);
  await run('docker', ['kill', killedId]);

  const fresh = await expectLostThenFresh(victim, () =>
    call('run_code', { code: "'x' in globals()", session_id: victim }));
  if (fresh.result !== undefined && fresh.result !== null) assert.equal(fresh.result, 'False');
  // Only once: the call after that is an ordinary one.
  const later = await runCode(victim, 'x = 5\nx');
  assert.equal(later.state_lost, false);
  assert.equal(later.warnings, undefined);

  assert.equal((await runCode(bystander, 'y')).result, '2', 'another session lost its state');
  const ids = [killedId, await sandboxContainerId(conn.client, victim),
    await sandboxContainerId(conn.client, bystander)];
  await call('cleanup_session', { session_id: victim });
  await call('cleanup_session', { session_id: bystander });
  await waitFor(async () => (await containersOfSession(victim, ids)).length === 0 &&
    (await containersOfSession(bystander, ids)).length === 0, 20000, 'container removal');
});

test('a file tool on a killed sandbox says it was lost; the next run says state_lost', async () => {
  const sid = (await runCode(undefined, 'open("f.txt", "w").write("data")')).session_id;
  const killedId = await sandboxContainerId(conn.client, sid);
  await run('docker', ['kill', killedId]);
  await waitFor(async () => (await containersOfSession(sid, [killedId])).length === 0, 20000, 'kill');
  const listed = await call('list_files', { session_id: sid });
  assert.equal(listed.isError, true, 'list_files on a dead sandbox must fail');
  assert.match(text(listed), /lost/i);
  const s = await expectLostThenFresh(sid, () =>
    call('run_shell', { command: 'ls f.txt', session_id: sid }));
  assert.notEqual(s.exit_code, 0, 'the old file must be gone in the fresh sandbox');
  const ids = [await sandboxContainerId(conn.client, sid)];
  await call('cleanup_session', { session_id: sid });
  await waitFor(async () => (await containersOfSession(sid, ids)).length === 0, 20000, 'removal');
});

test('the server still answers after the attacks', async () => {
  const res = await call('list_sessions', {});
  assert.ok(!res.isError);
});
