// Faults from outside the server: dockerd restarted under live sessions, the run-time directory's
// disk full. After each the server still answers, a session never silently loses its state
// (it says state_lost or fails with a clear error), new sessions work, and nothing leaks.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  assertNoLeaks, connectHttp, connectStdio, containersOfSession, sandboxContainerId, SERVER_BIN,
  snapshot, startHttpServer, stopServer, waitFor,
} from './attack_lib.mjs';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

async function call(client, name, args) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
}

// Restarts dockerd the way scripts/setup.sh starts it (no systemd here). Without live-restore,
// stopping dockerd stops every container, so every sandbox of every server dies.
function restartDockerd() {
  execFileSync('bash', ['-c', `source "${REPO_ROOT}/scripts/lib.sh"; restart_dockerd`], {
    stdio: ['ignore', 'ignore', 'pipe'], timeout: 120000,
  });
}

test('dockerd restarted under a live session: no silent state loss, new sessions work, nothing leaks',
  { timeout: 300000 }, async () => {
    const before = await snapshot();
    const server = await startHttpServer();
    let client;
    try {
      ({ client } = await connectHttp(server.url));
      const made = await call(client, 'run_code', { code: 'x = 41' });
      assert.equal(made.structuredContent?.status, 'success', JSON.stringify(made));
      const sid = made.structuredContent.session_id;
      const oldContainer = await sandboxContainerId(client, sid);

      restartDockerd();

      // The server itself keeps answering.
      const tools = await client.listTools();
      assert.ok(tools.tools.length > 0);

      // The session's next calls either fail with a clear error or start over and say so:
      // never `x` missing without state_lost.
      let recovered = null;
      for (let attempt = 0; attempt < 3 && !recovered; ++attempt) {
        const res = await call(client, 'run_code', { code: 'globals().get("x", "gone")', session_id: sid });
        const sc = res.structuredContent;
        if (res.isError) {
          assert.match(res.content[0].text, /sandbox|container|engine|docker/i,
            `an error must say what broke: ${res.content[0].text}`);
          continue;
        }
        if (sc.result === "'gone'") {
          assert.equal(sc.state_lost, true, `state vanished silently: ${JSON.stringify(sc)}`);
          assert.ok(sc.warnings?.length > 0, 'a lost sandbox is explained in warnings');
        }
        recovered = sc;
      }
      assert.ok(recovered, 'the session works again within three calls after the engine restart');
      assert.equal(recovered.status, 'success');
      assert.notEqual(await sandboxContainerId(client, sid), oldContainer);

      // A brand-new session works too (the warm pool refills or the session is created cold).
      const fresh = await call(client, 'run_shell', { command: 'ls / && echo ok' });
      assert.equal(fresh.structuredContent?.status, 'success', JSON.stringify(fresh));
      assert.match(fresh.structuredContent.stdout, /ok/);

      await call(client, 'cleanup_session', { session_id: sid });
      await call(client, 'cleanup_session', { session_id: fresh.structuredContent.session_id });
    } finally {
      await client?.close();
      await stopServer(server);
    }
    await assertNoLeaks(before);
  });

// A tmpfs of 256 KiB as mcp.runtime_dir; fill() takes its last byte, free() gives it back.
function smallTmpfs() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k,mode=0700', 'tmpfs', dir]);
  const filler = path.join(dir, 'filler');
  return {
    dir,
    fill: () => {
      try {
        execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=4k'], { stdio: 'ignore' });
      } catch { /* ENOSPC ends dd: that is the point */ }
    },
    free: () => fs.rmSync(filler, { force: true }),
    entries: () => fs.readdirSync(dir).filter((name) => name !== 'filler'),
    remove: () => {
      try { execFileSync('umount', [dir]); } catch { /* not mounted */ }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('the run-time directory\'s disk is full: a clear error, the server keeps serving, no leaks',
  { timeout: 300000 }, async () => {
    const before = await snapshot();
    const disk = smallTmpfs();
    const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-adv-'));
    const configFile = path.join(configDir, 'config.json');
    fs.writeFileSync(configFile, JSON.stringify({
      pool: { size: 0 },
      mcp: { runtime_dir: disk.dir, allowlist: ['http://127.0.0.1:9/mcp'], sidecar: { mode: 'process' } },
    }));
    // Full before the start: the server refuses to start, says where, and leaves nothing.
    disk.fill();
    const refused = spawnSync(SERVER_BIN, ['--stdio', '--config', configFile], {
      input: '', encoding: 'utf8', timeout: 30000,
    });
    assert.notEqual(refused.status, 0, refused.stderr);
    assert.match(refused.stderr, new RegExp(disk.dir), refused.stderr);
    assert.deepEqual(disk.entries(), [], 'a server that failed to start left files behind');
    disk.free();
    let conn;
    try {
      conn = await connectStdio(['--config', configFile]);
      const { client } = conn;
      disk.fill();  // full while the server runs
      const full = await call(client, 'run_code', {
        code: 'print(1)', mcp_allowlist: ['http://127.0.0.1:9/mcp'],
      });
      assert.equal(full.isError, true, `a session needing the full disk must fail: ${JSON.stringify(full)}`);
      assert.match(full.content[0].text, /space|ENOSPC|write|disk/i, full.content[0].text);

      // Sessions that need no run-time directory are not affected.
      const plain = await call(client, 'run_code', { code: '6 * 7' });
      assert.equal(plain.structuredContent?.result, '42', JSON.stringify(plain));

      // Space back: the same request works, and no half-made session directory was left.
      disk.free();
      const ok = await call(client, 'run_code', {
        code: 'import os; print(os.path.exists("/run/mcp/mcp.sock"))', mcp_allowlist: ['http://127.0.0.1:9/mcp'],
      });
      assert.equal(ok.structuredContent?.status, 'success', JSON.stringify(ok));
      assert.match(ok.structuredContent.stdout, /True/);
      const sid = ok.structuredContent.session_id;
      await call(client, 'cleanup_session', { session_id: sid });
      await call(client, 'cleanup_session', { session_id: plain.structuredContent.session_id });
      await waitFor(async () => (await containersOfSession(sid)).length === 0, 20000, 'session removal');
      await conn.client.close();
      conn = null;
      // Every session directory went with its session; the server's own directory at exit.
      await waitFor(async () => disk.entries().length === 0, 20000,
        'the server\'s run-time directory to go');
    } finally {
      await conn?.client.close();
      disk.free();
      disk.remove();
      fs.rmSync(configDir, { recursive: true, force: true });
    }
    await assertNoLeaks(before);
  });

test('the server SIGKILLed mid-execution, with pooled, cold and sidecar containers: nothing survives it',
  { timeout: 300000 }, async () => {
    const before = await snapshot();
    const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-adv-'));
    const configFile = path.join(configDir, 'config.json');
    fs.writeFileSync(configFile, JSON.stringify({
      pool: { size: 2 }, mcp: { allowlist: ['http://127.0.0.1:9/mcp'] },
    }));
    const doomed = await startHttpServer(['--config', configFile]);
    try {
      const { client } = await connectHttp(doomed.url);
      const warm = await call(client, 'run_code', { code: 'x = 1' });
      assert.equal(warm.structuredContent?.status, 'success', JSON.stringify(warm));
      const withSidecar = await call(client, 'run_code', {
        code: 'y = 2', mcp_allowlist: ['http://127.0.0.1:9/mcp'],
      });
      assert.equal(withSidecar.structuredContent?.status, 'success', JSON.stringify(withSidecar));
      // An execution in flight when the server dies: its process tree must go too.
      const inFlight = client.callTool({
        name: 'run_shell', arguments: { command: 'sleep 300', session_id: warm.structuredContent.session_id },
      }, undefined, { timeout: 120000 }).catch(() => 'connection lost');
      await new Promise((r) => setTimeout(r, 1000));
      const exited = new Promise((resolve) => doomed.on('exit', resolve));
      doomed.kill('SIGKILL');
      await exited;
      assert.equal(await inFlight, 'connection lost');
    } finally {
      if (doomed.exitCode === null && doomed.signalCode === null) doomed.kill('SIGKILL');
    }
    // The agents and sidecars see their stdin close and exit; the engine removes the containers
    // (AutoRemove). The dead server's run-time directory goes when the next server starts.
    const next = await startHttpServer(['--config', configFile]);
    await stopServer(next);
    fs.rmSync(configDir, { recursive: true, force: true });
    await assertNoLeaks(before, 30000);
  });
