// Attack: code in the sandbox opens connection after connection to its MCP sidecar until the relay
// runs out of descriptors. accept() then fails with EMFILE; a loop that retries at once spins and
// floods the log. The sidecar must pause, log a line (not thousands), and relay again once the
// connections are gone.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { SERVER_BIN, waitFor } from './attack_lib.mjs';

const SIDECAR_BIN = path.join(path.dirname(SERVER_BIN), 'sandbox-sidecar');

function cpuMs(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function post(socketPath, port, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({
      socketPath, path: '/mcp', method: 'POST', agent: false,
      headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json' },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function openIdle(socketPath) {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    socket.on('error', () => {});
    socket.once('connect', () => resolve(socket));
    socket.once('close', () => resolve(socket));
  });
}

test('500 idle connections against a sidecar with 64 descriptors: no spin, no log flood', async () => {
  const upstream = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('{"jsonrpc":"2.0","id":1,"result":{}}'));
  });
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
  const port = upstream.address().port;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adv-sidecar-fds-'));
  const socketPath = path.join(dir, 'mcp.sock');
  fs.writeFileSync(path.join(dir, 'policy.json'), JSON.stringify([`http://127.0.0.1:${port}/mcp`]));
  const sidecar = spawn('prlimit', ['--nofile=64:64', SIDECAR_BIN, '--listen', socketPath,
    '--policy', path.join(dir, 'policy.json'), '--audit-log', path.join(dir, 'audit.log'),
    '--session', 'adversarial'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  sidecar.stderr.on('data', (c) => (log += c.toString()));
  const sockets = [];
  try {
    await waitFor(() => fs.existsSync(socketPath), 10000, 'the sidecar socket');
    // Relay once first, and meet a client that hangs up mid-header, with descriptors to spare
    // (the sanitizer build checks each polymorphic type the first time it meets it through a
    // pipe(), which would fail later).
    assert.equal(await post(socketPath, port, '{}'), 200);
    const hanging = await openIdle(socketPath);
    hanging.write('POST /mcp HTTP/1.1\r\n');
    await new Promise((r) => setTimeout(r, 100));
    hanging.destroy();
    await new Promise((r) => setTimeout(r, 200));

    for (let i = 0; i < 500; ++i) sockets.push(openIdle(socketPath));
    await Promise.all(sockets);
    await new Promise((r) => setTimeout(r, 500));
    const before = cpuMs(sidecar.pid);
    await new Promise((r) => setTimeout(r, 3000));
    const spent = cpuMs(sidecar.pid) - before;
    const failures = (log.match(/accept failed/g) || []).length;
    console.log(`# sidecar CPU over 3 s at its fd limit: ${spent} ms; "accept failed" lines: ${failures}`);
    assert.ok(spent < 600, `the sidecar used ${spent} ms of CPU in 3 s while out of descriptors`);
    assert.ok(failures >= 1, `the EMFILE burst was never logged:\n${log.slice(-2000)}`);
    assert.ok(failures <= 3, `${failures} "accept failed" lines: the log is flooded`);

    for (const s of await Promise.all(sockets)) s.destroy();
    await waitFor(async () => (await post(socketPath, port, '{}').catch(() => 0)) === 200, 20000,
      'the sidecar to relay again');
    assert.equal(sidecar.exitCode, null, log);
  } finally {
    for (const s of await Promise.all(sockets)) s.destroy();
    const alive = sidecar.exitCode === null && sidecar.signalCode === null;
    const exited = new Promise((resolve) => sidecar.on('exit', (code, signal) => resolve(signal)));
    if (alive) sidecar.kill('SIGTERM');
    const signal = alive ? await exited : sidecar.signalCode;
    upstream.close();
    fs.rmSync(dir, { recursive: true, force: true });
    assert.ok(signal === null || signal === 'SIGTERM', `the sidecar died by ${signal}:\n${log}`);
  }
});
