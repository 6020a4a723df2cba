// Attack: hold the HTTP server's connections. Slowloris (a header dripped a byte at a time), more
// connections than one address may hold, and thousands of idle connections against a server whose
// fd limit is 256: accept() then fails with EMFILE, and a loop that retries at once spins and
// floods the log (700,000 lines in 3 s were seen). The server must refuse or time out the
// attackers, stay nearly idle, and answer a well-behaved client.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { connectHttp, SERVER_BIN, stopServer } from './attack_lib.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'adv-transport-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function writeConfig(name, http) {
  const file = path.join(tmp, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify({ pool: { size: 0 }, http }));
  return file;
}

// Starts sandbox-mcp on an ephemeral loopback port, optionally under `prlimit --nofile=N`.
function startServer(configFile, nofile = 0) {
  const args = ['--http', '127.0.0.1:0', '--config', configFile];
  const child = nofile
    ? spawn('prlimit', [`--nofile=${nofile}:${nofile}`, SERVER_BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(SERVER_BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.logText = () => log;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log}`)), 30000);
    child.stderr.on('data', (chunk) => {
      log += chunk.toString();
      const match = log.match(/Streamable HTTP at http:\/\/127\.0\.0\.1:(\d+)(\/\S*)/);
      if (match && !child.url) {
        clearTimeout(timer);
        child.port = Number(match[1]);
        child.url = `http://127.0.0.1:${match[1]}${match[2]}`;
        resolve(child);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (!child.url) reject(new Error(`server exited with ${code}:\n${log}`));
    });
  });
}

// User + system CPU time of a process, in ms (/proc/PID/stat, 100 ticks a second).
function cpuMs(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function openIdle(port, localAddress) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress });
    socket.on('error', () => {});
    socket.once('connect', () => resolve(socket));
    socket.once('close', () => resolve(socket));
    socket.closedAt = null;
    socket.once('close', () => (socket.closedAt = Date.now()));
  });
}

// Connects from `localAddress`, sends nothing, and returns all the server writes before closing.
function readUntilClosed(port, localAddress) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress });
    let text = '';
    socket.on('data', (c) => (text += c));
    socket.on('error', () => {});
    socket.on('close', () => resolve(text));
  });
}

// A raw initialize from a chosen local address: the status and body.
function initializeFrom(port, localAddress) {
  const body = JSON.stringify({
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'adv', version: '1' } },
  });
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port, localAddress, path: '/mcp', method: 'POST', agent: false,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function assertWellBehavedClientWorks(url) {
  const { client } = await connectHttp(url);
  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === 'run_code'));
  await client.close();
}

test('slowloris: headers dripped a byte at a time are cut off at the header timeout', async () => {
  const server = await startServer(writeConfig('slowloris', {}));  // header_timeout_ms: 10 s
  try {
    const request = 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
      'X-Padding: ' + 'a'.repeat(200) + '\r\n\r\n';
    const sockets = await Promise.all(Array.from({ length: 40 }, () => openIdle(server.port)));
    const started = Date.now();
    const drip = setInterval(() => {
      for (const s of sockets) {
        if (s.closedAt === null && !s.destroyed) s.write(request[(s.sent = (s.sent ?? 0) + 1) % request.length]);
      }
    }, 100);
    try {
      await assertWellBehavedClientWorks(server.url);  // while they drip
      const deadline = Date.now() + 20000;
      while (sockets.some((s) => s.closedAt === null) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      clearInterval(drip);
    }
    const open = sockets.filter((s) => s.closedAt === null).length;
    assert.equal(open, 0, `${open} dripping connections still open after 20 s (header timeout 10 s)`);
    const slowest = Math.max(...sockets.map((s) => s.closedAt - started));
    assert.ok(slowest < 15000, `a dripping connection lived ${slowest} ms`);
    await assertWellBehavedClientWorks(server.url);
  } finally {
    assert.equal(await stopServer(server), 0, server.logText());
  }
});

test('one address may hold 128 connections (the default); the 129th gets a 503, others still work', async () => {
  const server = await startServer(writeConfig('limits', {}));
  const sockets = [];
  try {
    for (let i = 0; i < 128; ++i) sockets.push(await openIdle(server.port, '127.0.0.9'));
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(sockets.every((s) => s.closedAt === null), 'the first 128 stay open');
    const refused = await readUntilClosed(server.port, '127.0.0.9');
    assert.match(refused, /^HTTP\/1\.1 503 /);
    assert.match(refused, /too many connections.*max_connections_per_address/);
    const other = await initializeFrom(server.port, '127.0.0.10');
    assert.equal(other.status, 200, other.text);
    await assertWellBehavedClientWorks(server.url);
  } finally {
    for (const s of sockets) s.destroy();
    assert.equal(await stopServer(server), 0, server.logText());
  }
});

test('2000 idle connections against a 256-fd server: no spin, no log flood, then it serves', async () => {
  const server = await startServer(writeConfig('emfile', {}), 256);
  // A server that has served a little first: a client, one that hangs up, one that resets. (The
  // sanitizer build checks each polymorphic type the first time it meets it by testing memory
  // through a pipe(), which fails with every descriptor taken and reads as an "invalid vptr";
  // meeting the error types here, with descriptors to spare, keeps that false report away.)
  await assertWellBehavedClientWorks(server.url);
  (await openIdle(server.port)).end();
  const resetting = await openIdle(server.port);
  resetting.write('POST /mcp HTTP/1.1\r\n');
  await new Promise((r) => setTimeout(r, 100));
  resetting.resetAndDestroy();
  await new Promise((r) => setTimeout(r, 200));
  const sockets = [];
  try {
    // Forty source addresses, fifty each: under the per-address limit, so the fd limit bites.
    const batches = [];
    for (let a = 0; a < 40; ++a) {
      for (let i = 0; i < 50; ++i) batches.push(openIdle(server.port, `127.0.1.${a + 1}`));
    }
    sockets.push(...(await Promise.all(batches)));
    await new Promise((r) => setTimeout(r, 500));
    const before = cpuMs(server.pid);
    await new Promise((r) => setTimeout(r, 3000));
    const spent = cpuMs(server.pid) - before;
    const failures = (server.logText().match(/accept failed/g) || []).length;
    console.log(`# server CPU over 3 s at its fd limit: ${spent} ms; "accept failed" lines: ${failures}`);
    assert.ok(spent < 600, `the server used ${spent} ms of CPU in 3 s while out of descriptors`);
    assert.ok(failures >= 1, `the EMFILE burst was never logged:\n${server.logText().slice(-2000)}`);
    assert.ok(failures <= 3, `${failures} "accept failed" lines: the log is flooded`);
  } finally {
    for (const s of sockets) s.destroy();
  }
  try {
    await new Promise((r) => setTimeout(r, 500));
    await assertWellBehavedClientWorks(server.url);
  } finally {
    assert.equal(await stopServer(server), 0, server.logText());
  }
});

// Sends a header announcing a `declared`-byte body and the first `sent` bytes of it, then holds
// the connection open.
function startLargeBody(port, declared, sent) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      const head = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"';
      socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
        `Accept: application/json, text/event-stream\r\nContent-Length: ${declared}\r\n\r\n` + head);
      if (sent > head.length) socket.write('x'.repeat(sent - head.length));
      setTimeout(() => resolve(socket), 500);
    });
    socket.response = '';
    socket.on('data', (chunk) => { socket.response += chunk.toString(); });
    socket.on('error', () => {});
  });
}

test('large bodies held open at once are bounded in total: past the budget a 503, then it serves', async () => {
  const MiB = 1024 * 1024;
  const server = await startServer(writeConfig('body-budget', {
    max_body_bytes: 4 * MiB, max_body_bytes_in_flight: 8 * MiB,
  }));
  const held = [];
  try {
    // Headers alone hold nothing: 20 connections announcing 4 MiB each but sending no body.
    for (let i = 0; i < 20; ++i) held.push(await startLargeBody(server.port, 4 * MiB, 0));
    // Two bodies of which 3.5 MiB really arrived use 7 MiB of the 8 MiB budget.
    held.push(await startLargeBody(server.port, 4 * MiB, 3.5 * MiB));
    held.push(await startLargeBody(server.port, 4 * MiB, 3.5 * MiB));
    assert.ok(held.every((s) => s.response === ''), 'nothing was refused within the budget');
    // A third that sends 2 MiB passes the budget: 503 naming the setting.
    const refused = await startLargeBody(server.port, 4 * MiB, 2 * MiB);
    const deadline = Date.now() + 5000;
    while (!refused.response && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.match(refused.response, /^HTTP\/1\.1 503/, refused.response || 'no answer');
    assert.match(refused.response, /max_body_bytes_in_flight/);
    refused.destroy();
    // Small requests fit in what is left: a well-behaved client works meanwhile.
    await assertWellBehavedClientWorks(server.url);
    for (const s of held.splice(0)) s.destroy();
    // Given back when the holders leave: a large body is accepted again.
    await new Promise((r) => setTimeout(r, 300));
    const again = await startLargeBody(server.port, 4 * MiB, 3.5 * MiB);
    assert.equal(again.response, '', `refused after the budget was given back: ${again.response}`);
    again.destroy();
  } finally {
    for (const s of held) s.destroy();
    assert.equal(await stopServer(server), 0, server.logText());
  }
});
