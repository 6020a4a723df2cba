// The frozen tier end to end, with the official MCP client, the real server, dockerd and runsc:
// an idle session is frozen with the host's cgroup freezer and its next call finds its variables
// and files; a background job keeps its session running (and making progress); a frozen
// session's timeout counts only thawed time; freeze: false opts out; the warm pool waits frozen
// and is claimed; cleanup, idle expiry and SIGTERM with frozen sessions leave nothing; a server
// killed with frozen sandboxes leaves nothing either (its freeze witness thaws them), and when
// the witness died too, the next start removes them without hanging.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import {
  connectHttp, containersOfInstance, dockerGet, processExited, startHttpServer, stopServer, waitFor,
} from './harness.mjs';
import { call } from './flow.mjs';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-freeze-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const newInstance = () => `e2e-freeze-${Math.random().toString(16).slice(2, 10)}`;

// A server over HTTP whose idle sessions freeze after 1 s quiet; `sessions` and `pool` extend
// its config.
async function startFreezing(instanceId, { sessions = {}, pool = { size: 0 } } = {}) {
  const file = path.join(dir, `${instanceId}.json`);
  writeFileSync(file, JSON.stringify({
    instance_id: instanceId,
    pool,
    sessions: { freeze_after_idle_s: 1, pause_after_idle_s: 0, ...sessions },
  }));
  const server = await startHttpServer(['--config', file]);
  const { client, transport } = await connectHttp(server.url);
  return { server, client, transport };
}

// The host's freezer state of a container ("FROZEN", "THAWED"), read the way an operator would:
// its first process's cgroup under the freezer hierarchy.
async function freezerState(containerId) {
  const { body } = await dockerGet(`/containers/${containerId}/json`);
  const line = readFileSync(`/proc/${body.State.Pid}/cgroup`, 'utf8').split('\n')
    .find((l) => l.split(':')[1]?.split(',').includes('freezer'));
  return readFileSync(`/sys/fs/cgroup/freezer${line.split(':')[2]}/freezer.state`, 'utf8').trim();
}

async function stats(client, sessionId) {
  const res = await call(client, 'get_session_stats', { session_id: sessionId });
  assert.equal(res.isError, false, JSON.stringify(res));
  return res.structuredContent;
}

async function waitState(client, sessionId, state, timeoutMs = 20000) {
  await waitFor(async () => (await stats(client, sessionId)).state === state, timeoutMs,
    `session ${sessionId} to be ${state}`);
}

async function runCode(client, args) {
  const res = await call(client, 'run_code', args);
  assert.equal(res.isError, false, JSON.stringify(res.structuredContent ?? res));
  return res.structuredContent;
}

test('an idle session is frozen on the host and its next call keeps its variables and files', async () => {
  const { server, client } = await startFreezing(newInstance());
  try {
    const first = await runCode(client, { code: 'x = 41\nopen("/tmp/kept.txt", "w").write("kept")\nx' });
    const sid = first.session_id;
    await waitState(client, sid, 'frozen');
    const containerId = (await stats(client, sid)).container_id;
    assert.equal(await freezerState(containerId), 'FROZEN');
    const listed = await call(client, 'list_sessions', {});
    assert.equal(listed.structuredContent.sessions.find((s) => s.session_id === sid).state, 'frozen');

    const started = Date.now();
    const next = await runCode(client, { session_id: sid, code: 'x += 1\n(x, open("/tmp/kept.txt").read())' });
    console.log(`# first call on a frozen session: ${Date.now() - started} ms`);
    assert.equal(next.result, "(42, 'kept')");
    assert.equal(await freezerState(containerId), 'THAWED');
    const metrics = await (await fetch(new URL('/metrics', server.url))).text();
    assert.match(metrics, /^sandbox_mcp_session_freezes_total [1-9]/m);
  } finally {
    await client.close();
    await stopServer(server);
  }
});

test('a background job keeps its session running and making progress; quiet, it is frozen', async () => {
  const { server, client } = await startFreezing(newInstance());
  try {
    const sid = (await runCode(client, { code: '1' })).session_id;
    const started = await call(client, 'run_shell', {
      session_id: sid,
      // The count is written beside and renamed over, so a reader never sees a truncated file.
      command: "nohup python3 -c 'import os\nn = 0\nwhile True:\n    n += 1\n    if n % 200000 == 0:\n        open(\"/tmp/n.new\", \"w\").write(str(n))\n        os.replace(\"/tmp/n.new\", \"/tmp/n\")' >/dev/null 2>&1 &\necho $! > /tmp/job.pid\necho started",
    });
    assert.equal(started.structuredContent.stdout.trim(), 'started');
    await new Promise((r) => setTimeout(r, 4000));
    assert.equal((await stats(client, sid)).state, 'running', 'frozen while its job computed');
    const read = async () => Number((await call(client, 'run_shell', { session_id: sid, command: 'cat /tmp/n' })).structuredContent.stdout);
    const before = await read();
    await new Promise((r) => setTimeout(r, 1500));
    assert.ok(await read() > before, 'the job made no progress between calls');
    const killed = await call(client, 'run_shell', { session_id: sid, command: 'kill $(cat /tmp/job.pid) && echo killed' });
    assert.equal(killed.structuredContent.stdout.trim(), 'killed', JSON.stringify(killed.structuredContent));
    await waitState(client, sid, 'frozen');
  } finally {
    await client.close();
    await stopServer(server);
  }
});

test("a frozen session's timeout counts only thawed time; freeze: false keeps a session running", async () => {
  const { server, client } = await startFreezing(newInstance());
  try {
    const sid = (await runCode(client, { code: 'import time\n1' })).session_id;
    await waitState(client, sid, 'frozen');
    await new Promise((r) => setTimeout(r, 7000));  // frozen longer than the call's timeout
    const res = await runCode(client, { session_id: sid, code: 'time.sleep(1)\n"in time"', timeout: 5 });
    assert.equal(res.status, 'success', JSON.stringify(res));
    assert.equal(res.result, "'in time'");

    const kept = (await runCode(client, { code: '1', freeze: false })).session_id;
    await new Promise((r) => setTimeout(r, 4000));
    assert.equal((await stats(client, kept)).state, 'running');
    const changed = await call(client, 'run_code', { session_id: kept, code: '1', freeze: true });
    assert.equal(changed.isError, true, 'the option is fixed at creation');
    assert.match(changed.content[0].text, /different freeze/);
  } finally {
    await client.close();
    await stopServer(server);
  }
});

test('the warm pool waits frozen and a session claims it', async () => {
  const instanceId = newInstance();
  const { server, client } = await startFreezing(instanceId, { pool: { size: 1 } });
  try {
    let pooled;
    await waitFor(async () => {
      const all = await containersOfInstance(instanceId);
      pooled = all.find((c) => c.State === 'running');
      return pooled && await freezerState(pooled.Id) === 'FROZEN';
    }, 60000, 'a frozen pooled sandbox');
    const started = Date.now();
    const made = await runCode(client, { code: '6 * 7' });
    console.log(`# a session from the frozen pool answered in ${Date.now() - started} ms`);
    assert.equal(made.result, '42');
    assert.equal((await stats(client, made.session_id)).container_id, pooled.Id, 'the pooled sandbox was not claimed');
  } finally {
    await client.close();
    await stopServer(server);
  }
});

test('cleanup, idle expiry and SIGTERM with frozen sessions leave nothing, and never wait on a freeze', async () => {
  const instanceId = newInstance();
  const { server, client } = await startFreezing(instanceId, { sessions: { idle_timeout_s: 10 } });
  let stopped = false;
  try {
    const sids = [];
    for (let i = 0; i < 3; ++i) sids.push((await runCode(client, { code: `${i}` })).session_id);
    for (const sid of sids) await waitState(client, sid, 'frozen');
    let started = Date.now();
    const cleaned = await call(client, 'cleanup_session', { session_id: sids[0] });
    assert.equal(cleaned.isError, false, JSON.stringify(cleaned));
    assert.ok(Date.now() - started < 10000, `cleanup of a frozen session took ${Date.now() - started} ms`);
    await waitFor(async () => (await containersOfInstance(instanceId)).length === 2, 10000, 'its container to go');
    // The second expires idle while frozen; the third is touched so that it outlives it.
    await runCode(client, { session_id: sids[2], code: '"still here"' });
    await waitFor(async () => (await containersOfInstance(instanceId)).length === 1, 20000, 'the idle one to expire');
    await waitState(client, sids[2], 'frozen');
    started = Date.now();
    assert.equal(await stopServer(server), 0, server.logText());
    stopped = true;
    console.log(`# SIGTERM with a frozen session: stopped in ${Date.now() - started} ms`);
    await waitFor(async () => (await containersOfInstance(instanceId)).length === 0, 15000, 'every container to go');
  } finally {
    await client.close().catch(() => {});
    if (!stopped) await stopServer(server);
  }
});

// The freeze witness of server `pid`: its child running `sandbox-mcp --freeze-witness`.
function witnessOf(pid) {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('--freeze-witness')) return Number(entry);
    } catch { /* gone meanwhile */ }
  }
  return undefined;
}

async function frozenSessions(client, count) {
  const sids = [];
  for (let i = 0; i < count; ++i) sids.push((await runCode(client, { code: `${i}` })).session_id);
  for (const sid of sids) await waitState(client, sid, 'frozen');
  return sids;
}

test('a server killed (SIGKILL) with frozen sandboxes leaves nothing: its witness thaws them', async () => {
  const instanceId = newInstance();
  const { server, client } = await startFreezing(instanceId);
  await frozenSessions(client, 2);
  assert.ok(witnessOf(server.pid), 'no freeze witness runs beside the server');
  server.kill('SIGKILL');
  const started = Date.now();
  await waitFor(async () => (await containersOfInstance(instanceId)).length === 0, 20000,
    'the thawed sandboxes to end with their server');
  console.log(`# a crashed server's 2 frozen sandboxes were gone ${Date.now() - started} ms after it died`);
  await client.close().catch(() => {});
});

test('frozen sandboxes that outlive their server and its witness are removed by the next start, without hanging', async () => {
  const instanceId = newInstance();
  const first = await startFreezing(instanceId);
  await frozenSessions(first.client, 2);
  const witness = witnessOf(first.server.pid);
  assert.ok(witness);
  process.kill(witness, 'SIGKILL');
  first.server.kill('SIGKILL');
  await waitFor(() => processExited(first.server.pid), 5000, 'the server to die');
  await new Promise((r) => setTimeout(r, 1000));
  const ids = (await containersOfInstance(instanceId)).map((c) => c.Id);
  assert.equal(ids.length, 2);
  for (const id of ids) assert.equal(await freezerState(id), 'FROZEN', 'a frozen agent cannot end itself');
  await first.client.close().catch(() => {});

  const started = Date.now();
  const second = await startFreezing(instanceId);
  try {
    await waitFor(async () => (await containersOfInstance(instanceId)).length === 0, 20000, 'the frozen orphans to go');
    console.log(`# start-up removed 2 frozen orphans within ${Date.now() - started} ms`);
    assert.match(second.server.logText(), /thawing container [0-9a-f]{12} before removing it/);
    assert.equal((await runCode(second.client, { code: '2 + 2' })).result, '4');
  } finally {
    await second.client.close();
    await stopServer(second.server);
  }
});

test("past max_sessions, one client's new sessions cannot push another's below its share", async () => {
  const instanceId = newInstance();
  const { server, client: alice } = await startFreezing(instanceId, {
    sessions: { max_sessions: 4, freeze_after_idle_s: 0, pause_after_idle_s: 0, snapshot_dir: path.join(dir, instanceId) },
  });
  const { client: bob } = await connectHttp(server.url);
  try {
    const states = async (client, sids) => Promise.all(sids.map(async (sid) => (await stats(client, sid)).state));
    const hers = [];
    for (let i = 0; i < 4; ++i) hers.push((await runCode(alice, { code: `a = ${i}` })).session_id);
    const his = [];
    for (let i = 0; i < 3; ++i) his.push((await runCode(bob, { code: `b = ${i}` })).session_id);
    const herStates = await states(alice, hers);
    const hisStates = await states(bob, his);
    assert.equal(herStates.filter((s) => s === 'running').length, 2, `alice: ${herStates}`);
    assert.equal(hisStates.filter((s) => s === 'running').length, 2, `bob: ${hisStates}`);
    assert.equal(hisStates[0], 'paused', 'bob, at his share, made room from his own sessions');
    const back = await runCode(alice, { session_id: hers[0], code: 'a' });
    assert.equal(back.result, '0', 'a paused session comes back with its state');
  } finally {
    await bob.close();
    await alice.close();
    await stopServer(server);
  }
});
