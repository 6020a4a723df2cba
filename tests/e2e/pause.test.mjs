// Idle sessions paused to disk and resumed on their next call, end to end with the official MCP
// client, the real server, dockerd and runsc: a variable, an open file and a background process
// survive; the paused session holds no container; a snapshot tampered with on disk is refused and
// the call says state_lost; nothing of the snapshots outlives the server, unless sessions.persist
// asks for it: then a server stopped (SIGTERM, or its stdio client gone) and started again answers
// the old handles of stdio clients and principals with their state, and nobody else's.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import {
  connectHttpV2, connectStdio, containersOfInstance, SERVER_BIN, processExited, startHttpServer, stopServer,
  waitFor,
} from './harness.mjs';
import { call } from './flow.mjs';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-pause-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// A stdio server whose sessions pause after 1 s idle; its snapshots under `snapshots`.
async function startPausing(instanceId) {
  const snapshots = path.join(dir, instanceId);
  const file = path.join(dir, `${instanceId}.json`);
  writeFileSync(file, JSON.stringify({
    instance_id: instanceId,
    pool: { size: 1 },
    sessions: { pause_after_idle_s: 1, snapshot_dir: snapshots },
  }));
  const conn = await connectStdio(['--config', file]);
  return { ...conn, snapshots, instanceDir: path.join(snapshots, instanceId) };
}

async function stats(client, sessionId) {
  const res = await call(client, 'get_session_stats', { session_id: sessionId });
  assert.equal(res.isError, false, JSON.stringify(res));
  return res.structuredContent;
}

async function waitPaused(client, sessionId) {
  let last;
  await waitFor(async () => {
    last = await stats(client, sessionId);
    return last.state === 'paused';
  }, 30000, 'the session to be paused');
  return last;
}

function snapshotDirs(instanceDir) {
  if (!existsSync(instanceDir)) return [];
  return readdirSync(instanceDir, { withFileTypes: true }).filter((e) => e.isDirectory())
    .map((e) => path.join(instanceDir, e.name));
}

async function runningContainers(instanceId) {
  return (await containersOfInstance(instanceId)).filter((c) => c.State === 'running');
}

test('a paused session holds no container and resumes with its variables, open files and processes', async () => {
  const instanceId = `e2e-pause-${Math.random().toString(16).slice(2, 10)}`;
  const { client, instanceDir } = await startPausing(instanceId);
  try {
    const first = await call(client, 'run_code', {
      code: [
        'import subprocess, numpy',
        'x = 42',
        'notes = open("/tmp/notes.txt", "w")',
        'notes.write("before ")',
        'worker = subprocess.Popen(["sleep", "600"])',
        'arr = numpy.arange(5)',
        'worker.pid > 0',
      ].join('\n'),
    });
    assert.equal(first.structuredContent.result, 'True', JSON.stringify(first.structuredContent));
    const sid = first.structuredContent.session_id;
    const running = await stats(client, sid);
    assert.equal(running.state, 'running');
    assert.equal(running.snapshot_bytes, 0);

    const paused = await waitPaused(client, sid);
    assert.ok(paused.snapshot_bytes > 1_000_000, `snapshot of ${paused.snapshot_bytes} bytes`);
    assert.equal(paused.container_status, 'paused');
    const listed = await call(client, 'list_sessions', {});
    assert.equal(listed.structuredContent.sessions.find((s) => s.session_id === sid).state, 'paused');
    // Its memory went with its container: only the pool's sandbox still runs.
    await waitFor(async () => (await runningContainers(instanceId)).length <= 1, 10000,
      'the paused sandbox container to go');
    assert.equal(snapshotDirs(instanceDir).length, 1, 'one sealed snapshot on disk');

    const resumed = await call(client, 'run_code', {
      session_id: sid,
      code: [
        'notes.write("after"); notes.flush()',
        '(x, open("/tmp/notes.txt").read(), worker.poll() is None, int(arr.sum()))',
      ].join('\n'),
    });
    assert.equal(resumed.isError, false, JSON.stringify(resumed));
    assert.equal(resumed.structuredContent.result, "(42, 'before after', True, 10)");
    assert.equal(resumed.structuredContent.state_lost, false);
    const after = await stats(client, sid);
    assert.equal(after.state, 'running');
    assert.equal(snapshotDirs(instanceDir).length, 0, 'the resumed session\'s snapshot is removed');

    const shell = await call(client, 'run_shell', { session_id: sid, command: 'pgrep -x sleep | wc -l' });
    assert.equal(shell.structuredContent.stdout.trim(), '1');

    // Paused again, it resumes again: a session goes through the cycle as often as it idles.
    await waitPaused(client, sid);
    const again = await call(client, 'run_code', { session_id: sid, code: 'x + 1' });
    assert.equal(again.structuredContent.result, '43');
  } finally {
    await client.close();
  }
  await waitFor(async () => (await containersOfInstance(instanceId)).length === 0, 15000,
    'no container of the instance after the server exits');
  assert.deepEqual(snapshotDirs(instanceDir), [], 'no snapshot outlives the server');
});

test('a snapshot tampered with on disk is refused: the call says state_lost and starts fresh', async () => {
  const instanceId = `e2e-tamper-${Math.random().toString(16).slice(2, 10)}`;
  const { client, instanceDir } = await startPausing(instanceId);
  try {
    const first = await call(client, 'run_code', { code: 'secret_state = "kept"' });
    const sid = first.structuredContent.session_id;
    await waitPaused(client, sid);
    const [snapshot] = snapshotDirs(instanceDir);
    assert.ok(snapshot, 'a snapshot directory');
    // Flip one byte of the saved memory: attacker-chosen Sentry state if it were restored.
    const pages = path.join(snapshot, 'pages.img');
    const bytes = readFileSync(pages);
    bytes[Math.floor(bytes.length / 2)] ^= 0xff;
    writeFileSync(pages, bytes);

    const res = await call(client, 'run_code', {
      session_id: sid, code: '"secret_state" in globals()',
    });
    assert.equal(res.isError, false, JSON.stringify(res));
    assert.equal(res.structuredContent.state_lost, true);
    assert.equal(res.structuredContent.result, 'False', 'a fresh sandbox, not the tampered state');
    const warnings = (res.structuredContent.warnings ?? []).join(' ');
    assert.match(warnings, /restoring its paused sandbox failed/);
    assert.match(warnings, /pages\.img/);
    assert.equal(res.structuredContent.session_id, sid, 'the same handle goes on');
    assert.deepEqual(snapshotDirs(instanceDir), [], 'the refused snapshot is removed');
  } finally {
    await client.close();
  }
});

test('a fork carries its parent\'s state and diverges; restore_session rolls back to a snapshot', async () => {
  const instanceId = `e2e-fork-${Math.random().toString(16).slice(2, 10)}`;
  const { client, instanceDir } = await startPausing(instanceId);
  try {
    const first = await call(client, 'run_code', {
      code: [
        'import subprocess, random',
        'x = 1',
        'open("data.txt", "w").write("parent data")',
        'worker = subprocess.Popen(["sleep", "600"])',
        'x',
      ].join('\n'),
    });
    const parent = first.structuredContent.session_id;

    const forked = await call(client, 'fork_session', { session_id: parent, count: 2 });
    assert.equal(forked.isError, false, JSON.stringify(forked));
    const ids = forked.structuredContent.sessions.map((s) => s.session_id);
    assert.equal(ids.length, 2);
    assert.equal(new Set([parent, ...ids]).size, 3, 'each copy has its own handle');

    const [a, b] = ids;
    const inA = await call(client, 'run_code', {
      session_id: a, code: 'x += 10\n(x, open("data.txt").read(), worker.poll() is None, random.random())',
    });
    const inB = await call(client, 'run_code', {
      session_id: b, code: 'x += 100\n(x, open("data.txt").read(), worker.poll() is None, random.random())',
    });
    assert.match(inA.structuredContent.result, /^\(11, 'parent data', True, /, inA.structuredContent.result);
    assert.match(inB.structuredContent.result, /^\(101, 'parent data', True, /, inB.structuredContent.result);
    assert.notEqual(inA.structuredContent.result.split(', ')[3], inB.structuredContent.result.split(', ')[3],
      'forks draw different random numbers (their generators are seeded anew)');
    const inParent = await call(client, 'run_code', { session_id: parent, code: 'x' });
    assert.equal(inParent.structuredContent.result, '1', 'the parent is untouched by its forks');

    // A snapshot, a change, and back.
    const snap = await call(client, 'snapshot_session', { session_id: parent, name: 'before' });
    assert.equal(snap.isError, false, JSON.stringify(snap));
    assert.ok(snap.structuredContent.bytes > 1_000_000);
    await call(client, 'run_code', { session_id: parent, code: 'x = 2\nopen("data.txt", "w").write("changed")' });
    const stats = await call(client, 'get_session_stats', { session_id: parent });
    assert.deepEqual(stats.structuredContent.snapshots.map((s) => s.snapshot), ['before']);
    const back = await call(client, 'restore_session', { session_id: parent, snapshot: 'before' });
    assert.equal(back.isError, false, JSON.stringify(back));
    const rolled = await call(client, 'run_code', {
      session_id: parent, code: '(x, open("data.txt").read())',
    });
    assert.equal(rolled.structuredContent.result, "(1, 'parent data')");

    // A fork from the snapshot, and a snapshot of another session is not this one's to restore.
    const fromSnapshot = await call(client, 'fork_session', { snapshot: 'before' });
    const c = fromSnapshot.structuredContent.sessions[0].session_id;
    const inC = await call(client, 'run_code', { session_id: c, code: 'x' });
    assert.equal(inC.structuredContent.result, '1');
    const wrong = await call(client, 'restore_session', { session_id: a, snapshot: 'before' });
    assert.equal(wrong.isError, true);
    assert.match(wrong.content[0].text, /was taken of session/);
    const unknown = await call(client, 'fork_session', { snapshot: 'nope' });
    assert.equal(unknown.isError, true);
    assert.match(unknown.content[0].text, /Unknown snapshot 'nope'/);
  } finally {
    await client.close();
  }
  await waitFor(async () => (await containersOfInstance(instanceId)).length === 0, 15000,
    'no container of the instance after the server exits');
  assert.deepEqual(snapshotDirs(instanceDir), [], 'no snapshot outlives the server');
});

// A config file for a server that saves its sessions (sessions.persist) under `dir`/`instanceId`.
function persistConfig(instanceId) {
  const snapshots = path.join(dir, instanceId);
  const file = path.join(dir, `${instanceId}.json`);
  writeFileSync(file, JSON.stringify({
    instance_id: instanceId,
    pool: { size: 0 },
    sessions: { persist: true, pause_after_idle_s: 0, snapshot_dir: snapshots },
  }));
  return { file, instanceDir: path.join(snapshots, instanceId) };
}

test('with sessions.persist a stdio server stopped and started again answers the old handle with its state', async () => {
  const instanceId = `e2e-persist-${Math.random().toString(16).slice(2, 10)}`;
  const { file, instanceDir } = persistConfig(instanceId);
  const first = await connectStdio(['--config', file]);
  let sid;
  try {
    const res = await call(first.client, 'run_code', {
      code: [
        'import subprocess',
        'x = 42',
        'notes = open("/tmp/notes.txt", "w")',
        'notes.write("before ")',
        'worker = subprocess.Popen(["sleep", "600"])',
        'x',
      ].join('\n'),
    });
    assert.equal(res.structuredContent.result, '42', JSON.stringify(res.structuredContent));
    sid = res.structuredContent.session_id;
    // SIGTERM: a drain, which saves the session instead of removing it.
    process.kill(first.transport.pid, 'SIGTERM');
    await waitFor(async () => processExited(first.transport.pid), 30000, 'the server to exit');
  } finally {
    await first.client.close();
  }
  assert.deepEqual(await containersOfInstance(instanceId), [], 'no container outlives the server');
  assert.equal(snapshotDirs(instanceDir).length, 1, 'the session is saved on disk');

  const second = await connectStdio(['--config', file]);
  try {
    const listed = await call(second.client, 'list_sessions', {});
    const entry = listed.structuredContent.sessions.find((s) => s.session_id === sid);
    assert.ok(entry, JSON.stringify(listed.structuredContent));
    assert.equal(entry.state, 'paused', 'brought back paused, restored on its first call');
    const resumed = await call(second.client, 'run_code', {
      session_id: sid,
      code: 'notes.write("after"); notes.flush()\n(x, open("/tmp/notes.txt").read(), worker.poll() is None)',
    });
    assert.equal(resumed.isError, false, JSON.stringify(resumed));
    assert.equal(resumed.structuredContent.state_lost, false);
    assert.equal(resumed.structuredContent.result, "(42, 'before after', True)");
  } finally {
    await second.client.close();  // stdin closed: saved again
  }
  await waitFor(async () => processExited(second.transport.pid), 30000, 'the server to exit');
  assert.equal(snapshotDirs(instanceDir).length, 1, 'saved again when its client closed stdin');

  const third = await connectStdio(['--config', file]);
  try {
    const again = await call(third.client, 'run_code', { session_id: sid, code: 'x + 1' });
    assert.equal(again.structuredContent.result, '43');
    const ended = await call(third.client, 'cleanup_session', { session_id: sid });
    assert.equal(ended.isError, false, JSON.stringify(ended));
  } finally {
    await third.client.close();
  }
  await waitFor(async () => processExited(third.transport.pid), 30000, 'the server to exit');
  assert.deepEqual(snapshotDirs(instanceDir), [], 'an ended session leaves nothing on disk');
});

test('with sessions.persist a principal\'s handle survives a restart of an HTTP server, and stays its own', async () => {
  const instanceId = `e2e-persist-http-${Math.random().toString(16).slice(2, 10)}`;
  const { file, instanceDir } = persistConfig(instanceId);
  const alice = randomBytes(24).toString('hex');
  const bob = randomBytes(24).toString('hex');
  const tokens = path.join(dir, `${instanceId}-tokens.json`);
  writeFileSync(tokens, JSON.stringify({ principals: [
    { name: 'alice', token: alice }, { name: 'bob', token: bob },
  ] }), { mode: 0o600 });
  const args = ['--config', file, '--tokens-file', tokens];
  const auth = (token) => ({ Authorization: `Bearer ${token}` });

  let server = await startHttpServer(args);
  let handle;
  try {
    const client = await connectHttpV2(server.url, auth(alice));
    const res = await client.callTool({ name: 'run_code', arguments: { code: 'secret = "Xq7pLm"\nsecret' } });
    assert.equal(res.isError, false, JSON.stringify(res));
    handle = res.structuredContent.session_id;
    await client.close();
  } finally {
    await stopServer(server);
  }
  assert.equal(snapshotDirs(instanceDir).length, 1, 'alice\'s session is saved');

  server = await startHttpServer(args);
  try {
    const thief = await connectHttpV2(server.url, auth(bob));
    const stolen = await thief.callTool({ name: 'run_code', arguments: { session_id: handle, code: 'secret' } });
    assert.equal(stolen.isError, true, 'bob reached alice\'s saved session');
    assert.doesNotMatch(JSON.stringify(stolen), /Xq7pLm/);
    await thief.close();
    const client = await connectHttpV2(server.url, auth(alice));
    const back = await client.callTool({ name: 'run_code', arguments: { session_id: handle, code: 'secret' } });
    assert.equal(back.isError, false, JSON.stringify(back));
    assert.equal(back.structuredContent.result, "'Xq7pLm'");
    assert.equal(back.structuredContent.state_lost, false);
    await client.callTool({ name: 'cleanup_session', arguments: { session_id: handle } });
    await client.close();
  } finally {
    await stopServer(server);
  }
  assert.deepEqual(snapshotDirs(instanceDir), []);
  assert.deepEqual(await containersOfInstance(instanceId), []);
});

test('sessions.persist without a fixed instance_id is refused at start-up, saying what to set', () => {
  const file = path.join(dir, 'persist-no-id.json');
  writeFileSync(file, JSON.stringify({ sessions: { persist: true } }));
  const env = { ...process.env };
  delete env.SANDBOX_MCP_INSTANCE_ID;
  const res = spawnSync(SERVER_BIN, ['--stdio', '--config', file], { env, encoding: 'utf8', timeout: 30000, input: '' });
  assert.notEqual(res.status, 0);
  assert.match(res.stderr, /sessions\.persist needs a fixed instance_id/);
});
