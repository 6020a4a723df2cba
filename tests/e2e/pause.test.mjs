// Idle sessions paused to disk and resumed on their next call, end to end with the official MCP
// client, the real server, dockerd and runsc: a variable, an open file and a background process
// survive; the paused session holds no container; a snapshot tampered with on disk is refused and
// the call says state_lost; nothing of the snapshots outlives the server.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { connectStdio, containersOfInstance, waitFor } from './harness.mjs';
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
