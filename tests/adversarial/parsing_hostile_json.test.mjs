// Attack: hostile JSON on every entry that parses it. A 2 MB POST whose params hold a million
// nested '[' used to end the server with SIGSEGV (recursive copies and dumps of the parsed tree
// overflow the stack), taking every client's sessions with it. The same over stdio, and to the
// sidecar's MCP body check; plus duplicate keys the sidecar and an upstream could read
// differently. After each attack the server answers, and a session opened before it still works.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { connectHttp, SERVER_BIN, startHttpServer, stopServer, waitFor } from './attack_lib.mjs';

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const DEPTH = 1_000_000;  // 2 MB of brackets: the body that crashed the server
const LIMIT = /nested deeper than 64 levels/;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'adv-parsing-'));
const configFile = path.join(tmp, 'config.json');
fs.writeFileSync(configFile, JSON.stringify({ pool: { size: 0 } }));

function nested(levels) {
  return '['.repeat(levels) + ']'.repeat(levels);
}
function deepInitialize(levels = DEPTH) {
  return '{"jsonrpc":"2.0","id":1,"method":"initialize","params":' + nested(levels) + '}';
}

let server;
let bystander;  // a well-behaved client whose session must survive every attack
before(async () => {
  server = await startHttpServer(['--config', configFile]);
  bystander = await connectHttp(server.url);
});
after(async () => {
  try {
    await bystander?.client.close().catch(() => {});
    if (server) assert.equal(await stopServer(server), 0, server.logText());
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

async function assertServerHealthy() {
  assert.equal(server.exitCode, null, `the server exited:\n${server.logText().slice(-4000)}`);
  const { tools } = await bystander.client.listTools();
  assert.ok(tools.some((t) => t.name === 'run_code'), 'the earlier session still lists tools');
  const fresh = await connectHttp(server.url);
  await fresh.client.listTools();
  await fresh.client.close();
}

test('HTTP: a million nested [ in initialize params is a -32700 naming the limit', async () => {
  const res = await fetch(server.url, { method: 'POST', headers: JSON_HEADERS, body: deepInitialize() });
  assert.equal(res.status, 400);
  const body = await res.json();
  assert.equal(body.error.code, -32700);
  assert.match(body.error.message, LIMIT);
  await assertServerHealthy();
});

test('HTTP: deep nesting inside a live session, in a batch and in the id', async () => {
  const sessionId = bystander.transport.sessionId;
  assert.ok(sessionId, 'the bystander has an MCP session id');
  const headers = { ...JSON_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
  const attacks = [
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_code","arguments":{"code":' + nested(DEPTH) + '}}}',
    '[' + deepInitialize() + ']',
    '{"jsonrpc":"2.0","id":' + nested(DEPTH) + ',"method":"ping"}',
    '{"a":'.repeat(200_000) + '1' + '}'.repeat(200_000),
  ];
  for (const body of attacks) {
    const res = await fetch(server.url, { method: 'POST', headers, body });
    assert.equal(res.status, 400);
    const reply = await res.json();
    assert.equal(reply.error.code, -32700);
    assert.match(reply.error.message, LIMIT);
  }
  await assertServerHealthy();
});

test('HTTP: a number past the range of a double is a -32700, small body or large', async () => {
  for (const pad of ['', 'x'.repeat(100 * 1024)]) {  // parsed on the I/O thread, then off it
    const body = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"${pad}","n":1e400}}`;
    const res = await fetch(server.url, { method: 'POST', headers: JSON_HEADERS, body, signal: AbortSignal.timeout(20000) });
    assert.equal(res.status, 400);
    const reply = await res.json();
    assert.equal(reply.error.code, -32700);
    assert.match(reply.error.message, /number overflow/);
  }
  await assertServerHealthy();
});

test('HTTP: 64 levels are still served; 65 are refused', async () => {
  const sessionId = bystander.transport.sessionId;
  const headers = { ...JSON_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
  // The message object is level 1, params level 2: 62 more arrays make 64.
  const ping = (levels) => `{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":${nested(levels)}}}`;
  const ok = await fetch(server.url, { method: 'POST', headers, body: ping(62) });
  assert.equal(ok.status, 200);
  assert.deepEqual((await ok.json()).result, {});
  const refused = await fetch(server.url, { method: 'POST', headers, body: ping(63) });
  assert.equal(refused.status, 400);
  assert.match((await refused.json()).error.message, LIMIT);
});

test('HTTP: a 40 MiB body ending in deep nesting is refused and the server keeps serving', async () => {
  const body = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"' + 'x'.repeat(40 * 1024 * 1024) +
    '","deep":' + nested(100_000) + '}}';
  const res = await fetch(server.url, { method: 'POST', headers: JSON_HEADERS, body });
  assert.equal(res.status, 400);
  assert.match((await res.json()).error.message, LIMIT);
  await assertServerHealthy();
});

test('HTTP: a small request is answered while a large body is being parsed', async () => {
  // Half a million numbers in a ping of the bystander's session: 4 MiB that take seconds to parse
  // in a sanitizer build (a 47 MiB one takes minutes there, about 4 s in a release build, and
  // used to stall every connection for that long), all of it off the I/O thread now.
  const sessionId = bystander.transport.sessionId;
  const headers = { ...JSON_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
  const item = '1234567,';
  const count = Math.floor((4 * 1024 * 1024) / item.length);
  const body = '{"jsonrpc":"2.0","id":99,"method":"ping","params":{"pad":[' + item.repeat(count) + '0]}}';
  const started = Date.now();
  const big = fetch(server.url, { method: 'POST', headers, body }).then(async (res) => {
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    return Date.now() - started;
  });
  await new Promise((r) => setTimeout(r, 500));  // the body is in and being parsed
  const smallStart = Date.now();
  const { tools } = await bystander.client.listTools();
  const smallMs = Date.now() - smallStart;
  assert.ok(tools.length > 0);
  const bigMs = await big;
  console.log(`# 4 MiB POST answered after ${bigMs} ms; tools/list meanwhile in ${smallMs} ms`);
  await assertServerHealthy();
});

// ---- stdio -----------------------------------------------------------------------------------

function startStdio() {
  const child = spawn(SERVER_BIN, ['--stdio', '--config', configFile], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let log = '';
  const waiters = [];
  child.stdout.on('data', (chunk) => {
    out += chunk.toString();
    let newline;
    while ((newline = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, newline);
      out = out.slice(newline + 1);
      const message = JSON.parse(line);
      const waiter = waiters.shift();
      if (waiter) waiter.resolve(message);
    }
  });
  child.stderr.on('data', (chunk) => (log += chunk.toString()));
  child.on('exit', (code, signal) => {
    for (const waiter of waiters.splice(0)) {
      waiter.reject(new Error(`the server exited (code ${code}, signal ${signal}):\n${log.slice(-3000)}`));
    }
  });
  child.next = () => new Promise((resolve, reject) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      reject(new Error(`the server had exited (signal ${child.signalCode}):\n${log.slice(-3000)}`));
    } else {
      waiters.push({ resolve, reject });
    }
  });
  child.send = (text) => child.stdin.write(text + '\n');
  child.logText = () => log;
  return child;
}

test('stdio: deep nesting and oversize lines are answered and the server keeps serving', async () => {
  const child = startStdio();
  try {
    child.send(JSON.stringify({
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'adv', version: '1' } },
    }));
    assert.ok((await child.next()).result, 'initialize answered');
    child.send('{"jsonrpc":"2.0","method":"notifications/initialized"}');

    child.send(deepInitialize());
    const deep = await child.next();
    assert.equal(deep.error.code, -32700);
    assert.match(deep.error.message, LIMIT);

    child.send('{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":' + nested(DEPTH) + '}}');
    assert.match((await child.next()).error.message, LIMIT);

    // A number past a double's range: nlohmann throws out_of_range, not parse_error, and that
    // line alone used to end the stdio server (found by the JSON-RPC fuzzer).
    child.send('{"jsonrpc":"2.0","id":5,"method":"ping","params":[1e400]}');
    const overflow = await child.next();
    assert.equal(overflow.error.code, -32700);
    assert.match(overflow.error.message, /number overflow/);

    child.send(' '.repeat(49 * 1024 * 1024));  // past stdio.max_message_bytes
    const oversize = await child.next();
    assert.equal(oversize.error.code, -32600);
    assert.match(oversize.error.message, /max_message_bytes/);

    child.send('{"jsonrpc":"2.0","id":4,"method":"tools/list"}');
    const list = await child.next();
    assert.equal(list.id, 4);
    assert.ok(list.result.tools.length > 0);
    assert.equal(child.exitCode, null, child.logText());
  } finally {
    const exited = child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve({ code: child.exitCode, signal: child.signalCode })
      : new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    child.stdin.end();
    const { code, signal } = await exited;
    assert.equal(signal, null, child.logText());
    assert.equal(code, 0, child.logText());
  }
});

// ---- sidecar ---------------------------------------------------------------------------------

const SIDECAR_BIN = path.join(path.dirname(SERVER_BIN), 'sandbox-sidecar');

function sidecarPost(socketPath, port, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({
      socketPath, path: '/restricted/mcp', method: 'POST',
      headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('sidecar: deep nesting and duplicate keys in an MCP body are refused with 400', async () => {
  const seen = [];
  const upstream = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push(body);
      res.setHeader('content-type', 'application/json');
      res.end('{"jsonrpc":"2.0","id":1,"result":{}}');
    });
  });
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
  const port = upstream.address().port;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adv-sidecar-'));
  const socketPath = path.join(dir, 'mcp.sock');
  fs.writeFileSync(path.join(dir, 'policy.json'), JSON.stringify([{
    url: `http://127.0.0.1:${port}/restricted`, id: 'restricted',
    methods: ['initialize', 'tools/list', 'tools/call'], tools: ['echo'],
  }]));
  const sidecar = spawn(SIDECAR_BIN, ['--listen', socketPath, '--policy', path.join(dir, 'policy.json'),
    '--audit-log', path.join(dir, 'audit.log'), '--session', 'adversarial'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  sidecar.stderr.on('data', (c) => (log += c.toString()));
  try {
    await waitFor(() => fs.existsSync(socketPath), 10000, 'the sidecar socket');
    const call = (params) => `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":${params}}`;
    assert.equal((await sidecarPost(socketPath, port, call('{"name":"echo"}'))).status, 200);
    const forwardedBefore = seen.length;

    // Half a million levels (1 MB, under the sidecar's default 1 MiB body limit), in the id of a
    // refused method (its error answer copies the id) and in the arguments of an allowed call.
    const half = 500_000;
    for (const body of [
      '{"jsonrpc":"2.0","id":' + nested(half - 10) + ',"method":"resources/list"}',
      call('{"name":"echo","arguments":' + nested(half - 20) + '}'),
    ]) {
      const res = await sidecarPost(socketPath, port, body);
      assert.equal(res.status, 400, res.text);
      assert.match(res.text, LIMIT);
    }

    // nlohmann keeps the last "name", many upstreams the first: the check must not pick one.
    const dup = await sidecarPost(socketPath, port, call('{"name":"shell","name":"echo"}'));
    assert.equal(dup.status, 400, dup.text);
    assert.match(dup.text, /repeats the key \\"name\\"/);
    assert.equal(seen.length, forwardedBefore, 'nothing refused reached the upstream');

    assert.equal(sidecar.exitCode, null, log);
    assert.equal((await sidecarPost(socketPath, port, call('{"name":"echo"}'))).status, 200);
  } finally {
    const exited = new Promise((resolve) => sidecar.on('exit', (code, signal) => resolve(signal)));
    const alive = sidecar.exitCode === null && sidecar.signalCode === null;
    if (alive) sidecar.kill('SIGTERM');
    const signal = alive ? await exited : sidecar.signalCode;
    upstream.close();
    fs.rmSync(dir, { recursive: true, force: true });
    assert.ok(signal === null || signal === 'SIGTERM', `the sidecar died by ${signal}:\n${log}`);
  }
});
