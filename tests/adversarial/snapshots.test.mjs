// Attacks on snapshots and forks (snapshot_session, fork_session, restore_session), with two
// clients (two MCP sessions over HTTP, so two owners). Must hold:
//  - a client cannot fork, restore or snapshot another client's snapshot or session: the names
//    and handles of another are unknown to it, and nothing is made for it;
//  - a snapshot flood stops at sessions.max_snapshots_per_client (a reused name replaces, and
//    the disk holds no more than the quota), a fork flood at the session limits;
//  - a forked sandbox has no network and stays under its memory limit, like any other;
//  - nothing of the snapshots outlives the clients and the server.
// (A snapshot file changed on disk is refused: tests/e2e/pause.test.mjs.)
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectHttp, containersOfInstance, startHttpServer, stopServer, waitFor } from './attack_lib.mjs';

let dir;
let server;
let snapshots;
const instanceId = `adv-snap-${Math.random().toString(16).slice(2, 10)}`;
const open = [];

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snapshots-'));
  snapshots = path.join(dir, 'snapshots');
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({
    instance_id: instanceId,
    pool: { size: 0 },
    sandbox: { memory_mib: 256 },
    sessions: {
      snapshot_dir: snapshots, pause_after_idle_s: 0, max_snapshots_per_client: 2,
      max_sessions_per_client: 3, max_forks_per_call: 4,
    },
  }));
  server = await startHttpServer(['--config', config]);
});

after(async () => {
  for (const c of open) await c.end().catch(() => {});
  if (server) await stopServer(server);
  fs.rmSync(dir, { recursive: true, force: true });
});

async function client() {
  const { client: c, transport } = await connectHttp(server.url);
  c.end = async () => { await transport.terminateSession().catch(() => {}); await c.close(); };
  open.push(c);
  return c;
}

async function call(c, name, args) {
  return c.callTool({ name, arguments: args });
}

function snapshotDirs() {
  const root = path.join(snapshots, instanceId);
  if (!fs.existsSync(root)) return [];
  return fs.readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
}

test('another client\'s snapshots and sessions are unknown: no fork, no restore, no snapshot', async () => {
  const alice = await client();
  const bob = await client();
  const made = await call(alice, 'run_code', { code: 'secret = "alice only"' });
  const aliceSession = made.structuredContent.session_id;
  const snap = await call(alice, 'snapshot_session', { session_id: aliceSession, name: 'mine' });
  assert.equal(snap.isError, false, JSON.stringify(snap));

  const forkByName = await call(bob, 'fork_session', { snapshot: 'mine' });
  assert.equal(forkByName.isError, true);
  assert.match(forkByName.content[0].text, /Unknown snapshot 'mine'/);
  const forkBySession = await call(bob, 'fork_session', { session_id: aliceSession });
  assert.equal(forkBySession.isError, true);
  assert.match(forkBySession.content[0].text, /Unknown session/);
  const snapOther = await call(bob, 'snapshot_session', { session_id: aliceSession, name: 'stolen' });
  assert.equal(snapOther.isError, true);
  const restoreOther = await call(bob, 'restore_session', { session_id: aliceSession, snapshot: 'mine' });
  assert.equal(restoreOther.isError, true);
  // Bob's own session cannot be rolled back to Alice's snapshot either.
  const bobs = (await call(bob, 'run_code', { code: 'y = 1' })).structuredContent.session_id;
  const cross = await call(bob, 'restore_session', { session_id: bobs, snapshot: 'mine' });
  assert.equal(cross.isError, true);
  assert.match(cross.content[0].text, /Unknown snapshot/);

  const listed = await call(bob, 'list_sessions', {});
  assert.deepEqual(listed.structuredContent.sessions.map((s) => s.session_id), [bobs],
    'nothing was made for bob');
  const still = await call(alice, 'run_code', { session_id: aliceSession, code: 'secret' });
  assert.equal(still.structuredContent.result, "'alice only'");
});

test('a snapshot flood stops at the quota; a reused name replaces; a fork flood stops at the session limit', async () => {
  const mallory = await client();
  const sid = (await call(mallory, 'run_code', { code: 'z = 0' })).structuredContent.session_id;
  const before = snapshotDirs().length;
  for (const name of ['a', 'b']) {
    const r = await call(mallory, 'snapshot_session', { session_id: sid, name });
    assert.equal(r.isError, false, JSON.stringify(r));
  }
  const third = await call(mallory, 'snapshot_session', { session_id: sid, name: 'c' });
  assert.equal(third.isError, true);
  assert.match(third.content[0].text, /busy: .*max_snapshots_per_client/);
  for (let i = 0; i < 3; i++) {
    const again = await call(mallory, 'snapshot_session', { session_id: sid, name: 'a' });
    assert.equal(again.isError, false, 'a reused name replaces its snapshot');
  }
  assert.equal(snapshotDirs().length, before + 2, 'the disk holds the quota, no more');

  const bad = await call(mallory, 'snapshot_session', { session_id: sid, name: '../../etc' });
  assert.equal(bad.isError, true, 'a name is never a path');

  // max_sessions_per_client is 3 and mallory holds 1: a fork of 4 makes 2, and says so.
  const flood = await call(mallory, 'fork_session', { snapshot: 'a', count: 4 });
  assert.equal(flood.isError, false, JSON.stringify(flood));
  assert.equal(flood.structuredContent.sessions.length, 2);
  assert.match(flood.content[0].text, /fewer than asked/);
  const full = await call(mallory, 'fork_session', { snapshot: 'a' });
  assert.equal(full.isError, true);
  assert.match(full.content[0].text, /busy: this client holds 3 sessions/);
  const tooMany = await call(mallory, 'fork_session', { snapshot: 'a', count: 50 });
  assert.equal(tooMany.isError, true, 'past sessions.max_forks_per_call');
});

test('a fork has no network and stays under its memory limit', async () => {
  const eve = await client();
  const sid = (await call(eve, 'run_code', { code: 'import socket\nq = 1' })).structuredContent.session_id;
  const fork = await call(eve, 'fork_session', { session_id: sid });
  const child = fork.structuredContent.sessions[0].session_id;
  const port = new URL(server.url).port;
  const net = await call(eve, 'run_code', {
    session_id: child,
    code: [
      'out = []',
      `for host, port in (("127.0.0.1", ${port}), ("10.255.255.1", 80), ("1.1.1.1", 53)):`,
      '    s = socket.socket(); s.settimeout(2)',
      '    try:',
      '        s.connect((host, port)); out.append("connected " + host)',
      '    except OSError as e:',
      '        out.append(type(e).__name__)',
      'out',
    ].join('\n'),
  });
  assert.equal(net.isError, false, JSON.stringify(net));
  assert.doesNotMatch(net.structuredContent.result, /connected/, net.structuredContent.result);

  const hog = await call(eve, 'run_code', {
    session_id: child,
    code: 'blocks = []\nfor _ in range(16): blocks.append(bytearray(64 << 20))\nlen(blocks)',
  });
  const text = JSON.stringify(hog);
  assert.ok(hog.isError || hog.structuredContent.status !== 'success', `1 GiB fit under 256 MiB: ${text.slice(0, 300)}`);
  assert.match(text, /memory/i);
});

test('nothing of the snapshots outlives the clients and the server', async () => {
  // DELETE ends each client's MCP session: its sessions and its snapshots go.
  for (const c of open.splice(0)) await c.end();
  await waitFor(async () => snapshotDirs().length === 0, 15000, 'the clients\' snapshots to go');
  await stopServer(server);
  server = undefined;
  await waitFor(async () => (await containersOfInstance(instanceId)).length === 0, 15000, 'no container left');
  assert.equal(fs.existsSync(path.join(snapshots, instanceId)), false, 'the instance directory goes when empty');
});
