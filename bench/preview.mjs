// Preview URLs measured: what a browser pays for reaching a server in the sandbox through
// expose_port's URL (the host's preview listener -> a Unix socket -> the sandbox's agent ->
// 127.0.0.1:PORT in the sandbox), against the same client talking to the same server from inside
// the sandbox, in one run. One HTTP server with `preview.listen` 127.0.0.1:0 (no warm pool), one
// session running two servers of node's built-ins (the image has Node 18, no npm packages):
//   bench_server.cjs   /small (300 bytes) and /zeros/N (N zero bytes, streamed);
//   server.cjs         tests/e2e/preview_site.mjs's PREVIEW_SERVER_JS, for its /ws echo.
// The measuring client (CLIENT_JS below: raw sockets, HTTP/1.1 and a minimal WebSocket client)
// runs as a node process on the host, against the preview URL (127.0.0.1:<listener port> with
// `Host: <label>.localhost:<port>`), and in the sandbox (run_shell), against 127.0.0.1:PORT;
// rounds interleave the two sides:
//   1. a small GET on a warm keep-alive connection, p50/p90 (the target: under 1 ms added p50);
//   2. a WebSocket round trip (a 32-byte text message echoed), p50/p90;
//   3. a 100 MiB download on a new connection, MiB/s (the target: at least 100 MiB/s);
//   and, for context, a GET on a new connection each time (the preview opens a stream into the
//   sandbox per connection: open_port).
// Timing targets are reported, never asserted. Results in bench/results/preview.{md,json}. See
// bench/README.md.
//
// Env: SANDBOX_MCP_BIN (required), BENCH_RESULTS_DIR, BENCH_PID_FILE, BENCH_SCALE.
import { execFile } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { SERVER_BIN, connectHttp, getEndpoint, startHttpServer, waitFor } from '../tests/e2e/harness.mjs';
import { PREVIEW_SERVER_JS } from '../tests/e2e/preview_site.mjs';
import { SCALE, callOk, finishBenchmark, fmt, machineInfo, stopServerChecked } from './lib.mjs';

const run = promisify(execFile);
const log = (msg) => process.stderr.write(`bench: ${msg}\n`);
const ROUNDS = 3; // each kind of measurement comes in this many rounds, the sides interleaved
const PER_ROUND = Math.max(20, Math.round(100 * SCALE)); // warm GETs and WebSocket round trips
const FRESH_PER_ROUND = Math.max(5, Math.round(10 * SCALE)); // GETs on a new connection each
const DOWNLOAD_BYTES = 100 * 1024 * 1024;
const DOWNLOADS_PER_ROUND = 1;
const WARMUP = 20; // untimed requests on the connection before the timed ones
const SMALL_BYTES = 300;
const HTTP_PORT = 8080; // bench_server.cjs in the sandbox
const WS_PORT = 8081; // PREVIEW_SERVER_JS in the sandbox
const SANDBOX_DIR = '/tmp/preview-bench';
const TARGET_ADDED_MS = 1;
const TARGET_MIBS = 100;

// --- what runs in the sandbox (and the client on the host too) -------------------------------
// /small and /zeros/N over HTTP/1.1 keep-alive, node's built-ins only.
const BENCH_SERVER_JS = String.raw`'use strict';
const http = require('http');
const port = Number(process.argv[2]);
const SMALL = Buffer.from('x'.repeat(${SMALL_BYTES - 1}) + '\n');
const ZEROS = Buffer.alloc(1 << 20);
const server = http.createServer((req, res) => {
  const zeros = /^\/zeros\/(\d+)$/.exec(req.url);
  if (req.url === '/small') {
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': SMALL.length });
    res.end(SMALL);
  } else if (zeros) {
    let left = Number(zeros[1]);
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': left });
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, ZEROS.length);
        left -= n;
        if (!res.write(n === ZEROS.length ? ZEROS : ZEROS.subarray(0, n))) return res.once('drain', pump);
      }
      return res.end();
    };
    pump();
  } else {
    res.writeHead(404, { 'Content-Length': 0 });
    res.end();
  }
});
server.keepAliveTimeout = 120000; // the host's connection waits while the sandbox's side runs
process.on('SIGTERM', () => process.exit(0));
server.listen(port, '127.0.0.1', () => console.log('listening on 127.0.0.1:' + port));
`;

// node client.cjs '<json>': {host, port, hostHeader, mode: get|fresh|ws|download, n, warmup,
// path}. Prints one JSON line: {samples: [ms, ...]} (download: from connect to the last byte).
const CLIENT_JS = String.raw`'use strict';
const crypto = require('crypto');
const net = require('net');
const cfg = JSON.parse(process.argv[2]);
const now = () => Number(process.hrtime.bigint()) / 1e6;

// A socket with a receive buffer: next(parse) resolves once parse(buffer) returns
// {value, used}; count(n) resolves once n more bytes arrived, keeping none of them.
class Conn {
  constructor(sock) {
    this.sock = sock;
    this.buf = Buffer.alloc(0);
    this.parse = null; this.left = 0; this.resolve = null; this.reject = null; this.error = null;
    sock.on('data', (chunk) => {
      if (this.left > 0) {
        this.left -= chunk.length;
        if (this.left <= 0) this.settle(undefined);
        return;
      }
      this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
      this.step();
    });
    const fail = (err) => {
      this.error = this.error || err;
      if (this.reject) { const reject = this.reject; this.parse = this.resolve = this.reject = null; reject(this.error); }
    };
    sock.on('error', fail);
    sock.on('close', () => fail(new Error('the connection closed; received so far: ' +
      JSON.stringify(this.buf.subarray(0, 300).toString('latin1')))));
  }
  wait(setup) {
    return new Promise((resolve, reject) => {
      if (this.error) return reject(this.error);
      this.resolve = resolve; this.reject = reject;
      setup();
    });
  }
  settle(value) { const resolve = this.resolve; this.parse = this.resolve = this.reject = null; resolve(value); }
  next(parse) { return this.wait(() => { this.parse = parse; this.step(); }); }
  step() {
    if (!this.parse) return;
    const got = this.parse(this.buf);
    if (!got) return;
    this.buf = this.buf.subarray(got.used);
    this.settle(got.value);
  }
  count(n) {
    return this.wait(() => {
      const have = Math.min(this.buf.length, n);
      this.buf = this.buf.subarray(have);
      if (have >= n) return this.settle(undefined);
      this.left = n - have;
    });
  }
}

function connect() {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: cfg.host, port: cfg.port, noDelay: true });
    sock.once('error', reject);
    sock.once('connect', () => { sock.removeListener('error', reject); resolve(new Conn(sock)); });
  });
}

function parseHead(buf) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const headers = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { value: { status: Number(lines[0].split(' ')[1]), line: lines[0], headers }, used: end + 4 };
}
const parseBytes = (n) => (buf) => (buf.length >= n ? { value: buf.subarray(0, n), used: n } : null);

async function head(conn, target, extra = '') {
  conn.sock.write('GET ' + target + ' HTTP/1.1\r\nHost: ' + cfg.hostHeader + '\r\n' + extra + '\r\n');
  const got = await conn.next(parseHead);
  const length = Number(got.headers['content-length']);
  if (got.status !== 200 && got.status !== 101) {
    const body = Number.isFinite(length) ? (await conn.next(parseBytes(length))).toString() : '';
    throw new Error('GET ' + target + ': ' + got.line + ': ' + body.slice(0, 300));
  }
  return { ...got, length };
}

async function get(conn, target) {
  const got = await head(conn, target);
  if (!Number.isFinite(got.length)) throw new Error('GET ' + target + ': no Content-Length');
  return conn.next(parseBytes(got.length));
}

// A masked client frame (RFC 6455), payload under 126 bytes; the server's come unmasked.
function wsFrame(opcode, payload) {
  const mask = crypto.randomBytes(4);
  const out = Buffer.alloc(6 + payload.length);
  out[0] = 0x80 | opcode;
  out[1] = 0x80 | payload.length;
  mask.copy(out, 2);
  for (let i = 0; i < payload.length; i++) out[6 + i] = payload[i] ^ mask[i & 3];
  return out;
}
function parseFrame(buf) {
  if (buf.length < 2) return null;
  let len = buf[1] & 0x7f;
  let off = 2;
  if (len === 126) { if (buf.length < 4) return null; len = buf.readUInt16BE(2); off = 4; }
  else if (len === 127) { if (buf.length < 10) return null; len = Number(buf.readBigUInt64BE(2)); off = 10; }
  if (buf.length < off + len) return null;
  return { value: { opcode: buf[0] & 0x0f, payload: buf.subarray(off, off + len) }, used: off + len };
}

async function main() {
  const samples = [];
  const total = cfg.warmup + cfg.n;
  if (cfg.mode === 'get') {
    const conn = await connect();
    for (let i = 0; i < total; i++) {
      const t0 = now();
      const body = await get(conn, cfg.path);
      const ms = now() - t0;
      if (body.length !== cfg.bytes) throw new Error('expected ' + cfg.bytes + ' bytes, got ' + body.length);
      if (i >= cfg.warmup) samples.push(ms);
    }
    conn.sock.destroy();
  } else if (cfg.mode === 'fresh') {
    for (let i = 0; i < cfg.n; i++) {
      const t0 = now();
      const conn = await connect();
      const body = await get(conn, cfg.path);
      samples.push(now() - t0);
      if (body.length !== cfg.bytes) throw new Error('expected ' + cfg.bytes + ' bytes, got ' + body.length);
      conn.sock.destroy();
    }
  } else if (cfg.mode === 'ws') {
    const conn = await connect();
    const key = crypto.randomBytes(16).toString('base64');
    const up = await head(conn, '/ws', 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ' +
      key + '\r\nSec-WebSocket-Version: 13\r\n');
    const accept = crypto.createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
    if (up.status !== 101 || up.headers['sec-websocket-accept'] !== accept) throw new Error('no upgrade: ' + up.line);
    for (let i = 0; i < total; i++) {
      const message = Buffer.from(('ping ' + i + ' ').padEnd(32, '.'));
      const t0 = now();
      conn.sock.write(wsFrame(0x1, message));
      const echo = await conn.next(parseFrame);
      const ms = now() - t0;
      if (echo.opcode !== 0x1 || !echo.payload.equals(message)) throw new Error('bad echo: ' + echo.payload);
      if (i >= cfg.warmup) samples.push(ms);
    }
    conn.sock.write(wsFrame(0x8, Buffer.from([0x03, 0xe8]))); // 1000, normal closure
    await conn.next(parseFrame);
    conn.sock.destroy();
  } else if (cfg.mode === 'download') {
    for (let i = 0; i < cfg.n; i++) {
      const t0 = now();
      const conn = await connect();
      const got = await head(conn, cfg.path);
      if (got.length !== cfg.bytes) throw new Error('Content-Length ' + got.length + ', expected ' + cfg.bytes);
      await conn.count(got.length);
      samples.push(now() - t0);
      conn.sock.destroy();
    }
  } else {
    throw new Error('unknown mode ' + cfg.mode);
  }
  console.log(JSON.stringify({ samples }));
}

main().catch((err) => { console.error(String(err && err.stack || err)); process.exit(1); });
`;

// --- the two sides ---------------------------------------------------------------------------
const series = new Map();
function record(name, values) {
  if (!series.has(name)) series.set(name, []);
  series.get(name).push(...values);
}

async function hostClient(clientPath, config) {
  try {
    const { stdout } = await run('node', [clientPath, JSON.stringify(config)],
      { maxBuffer: 16 * 1024 * 1024, timeout: 600_000 });
    return JSON.parse(stdout.trim().split('\n').pop()).samples;
  } catch (error) {
    throw new Error(`the host client (${config.mode} ${config.path}) failed: ${error.stderr || error.message}`);
  }
}

async function sandboxShell(client, sessionId, command, timeout = 600) {
  const out = await callOk(client, 'run_shell', { session_id: sessionId, command, timeout });
  if (out.status !== 'success') {
    throw new Error(`sandbox command failed (${out.status}): ${command.slice(0, 200)}\n${out.stdout}\n${out.stderr}`);
  }
  return out.stdout;
}

async function sandboxClient(client, sessionId, config) {
  const stdout = await sandboxShell(client, sessionId,
    `node ${SANDBOX_DIR}/client.cjs '${JSON.stringify(config)}'`);
  return JSON.parse(stdout.trim().split('\n').pop()).samples;
}

// Writes `files` ({name: text}) under SANDBOX_DIR in the session, and starts the two servers.
async function startSandboxServers(client, sessionId) {
  const files = { 'bench_server.cjs': BENCH_SERVER_JS, 'server.cjs': PREVIEW_SERVER_JS, 'client.cjs': CLIENT_JS };
  const code = ['import os', `os.makedirs(${JSON.stringify(SANDBOX_DIR)}, exist_ok=True)`];
  for (const [name, text] of Object.entries(files)) {
    code.push(`open(${JSON.stringify(`${SANDBOX_DIR}/${name}`)}, 'w').write(${JSON.stringify(text)})`);
  }
  await callOk(client, 'run_code', { session_id: sessionId, code: code.join('\n') });
  await sandboxShell(client, sessionId,
    `cd ${SANDBOX_DIR} && (nohup node bench_server.cjs ${HTTP_PORT} > http.log 2>&1 &) && ` +
    `(nohup node server.cjs ${WS_PORT} ${SANDBOX_DIR}/none.png > ws.log 2>&1 &)`);
  await waitFor(async () => {
    const logs = await sandboxShell(client, sessionId, `cat ${SANDBOX_DIR}/http.log ${SANDBOX_DIR}/ws.log`);
    return logs.includes(`listening on 127.0.0.1:${HTTP_PORT}`) && logs.includes(`listening on 127.0.0.1:${WS_PORT}`);
  }, 30000, 'the servers in the sandbox to listen');
}

// expose_port's URL as the host client's target: {host, port, hostHeader}.
async function exposed(client, sessionId, port) {
  const out = await callOk(client, 'expose_port', { session_id: sessionId, port, expires_s: 3600 });
  const url = new URL(out.url);
  if (!url.hostname.endsWith('.localhost')) throw new Error(`unexpected preview URL ${out.url}`);
  return { host: '127.0.0.1', port: Number(url.port), hostHeader: url.host, url: out.url };
}

async function measure(client, sessionId, clientPath) {
  const httpTarget = await exposed(client, sessionId, HTTP_PORT);
  const wsTarget = await exposed(client, sessionId, WS_PORT);
  log(`preview URLs ${httpTarget.url.replace(/\/\/([0-9a-f]{8})[0-9a-f]{24}/, '//$1…')} and ` +
    `${wsTarget.url.replace(/\/\/([0-9a-f]{8})[0-9a-f]{24}/, '//$1…')}`);
  const inside = (port) => ({ host: '127.0.0.1', port, hostHeader: `127.0.0.1:${port}` });
  const kinds = [
    { name: 'get', mode: 'get', path: '/small', bytes: SMALL_BYTES, n: PER_ROUND, warmup: WARMUP, port: HTTP_PORT, target: httpTarget },
    { name: 'ws', mode: 'ws', path: '/ws', n: PER_ROUND, warmup: WARMUP, port: WS_PORT, target: wsTarget },
    { name: 'fresh', mode: 'fresh', path: '/small', bytes: SMALL_BYTES, n: FRESH_PER_ROUND, warmup: 0, port: HTTP_PORT, target: httpTarget },
    { name: 'download', mode: 'download', path: `/zeros/${DOWNLOAD_BYTES}`, bytes: DOWNLOAD_BYTES, n: DOWNLOADS_PER_ROUND, warmup: 0, port: HTTP_PORT, target: httpTarget },
  ];
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of kinds) {
      const { name, target, port, ...config } = kind;
      const sides = [
        ['preview', () => hostClient(clientPath, { ...config, host: target.host, port: target.port, hostHeader: target.hostHeader })],
        ['sandbox', () => sandboxClient(client, sessionId, { ...config, ...inside(port) })],
      ];
      if (round % 2) sides.reverse();
      for (const [side, fn] of sides) record(`${name}.${side}`, await fn());
    }
    log(`round ${round + 1}/${ROUNDS} done`);
  }
  await callOk(client, 'unexpose_port', { session_id: sessionId, port: HTTP_PORT });
  await callOk(client, 'unexpose_port', { session_id: sessionId, port: WS_PORT });
}

// --- report ----------------------------------------------------------------------------------
// Nearest rank, as lib.mjs's summarize.
function pct(samples, p) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1];
}
const mibs = (ms) => DOWNLOAD_BYTES / 2 ** 20 / (ms / 1000);
const signed = (ms) => `${ms >= 0 ? '+' : '−'}${fmt(Math.abs(ms))} ms`;

function report(info) {
  const s = (name) => series.get(name);
  const md = [`# sandbox-mcp: preview URLs against the same client in the sandbox, ${info.date}`, ''];
  md.push(`- machine: ${info.nproc} CPUs (${info.cpu}), docker ${info.docker}, runsc ${info.runsc}`);
  md.push(`- load average (1/5/15 min): ${info.load_start} at start, ${info.load_end} at end`);
  md.push(`- one session; servers of node's built-ins in it (a ${SMALL_BYTES}-byte /small, /zeros/N, tests/e2e/preview_site.mjs's /ws echo); ` +
    `the same raw-socket client (node) on the host through the preview URL and in the sandbox on 127.0.0.1; ${ROUNDS} interleaved rounds`, '');
  md.push('| figure | n | preview | in sandbox | added (preview − in sandbox) | ratio |', '|---|--:|--:|--:|--:|--:|');
  const latencyRows = [
    ['small GET, warm keep-alive connection', 'get'],
    ['WebSocket round trip (32-byte echo)', 'ws'],
    ['for context: GET on a new connection each (preview: its open_port included)', 'fresh'],
  ];
  for (const [what, name] of latencyRows) {
    const a = s(`${name}.preview`);
    const b = s(`${name}.sandbox`);
    for (const p of [50, 90]) {
      const pa = pct(a, p);
      const pb = pct(b, p);
      md.push(`| ${what}, p${p} ms | ${a.length} | ${fmt(pa)} | ${fmt(pb)} | ${signed(pa - pb)} | ${(pa / pb).toFixed(2)}× |`);
    }
  }
  const da = s('download.preview').map(mibs);
  const db = s('download.sandbox').map(mibs);
  const ma = pct(da, 50);
  const mb = pct(db, 50);
  md.push(`| 100 MiB download, MiB/s (median; new connection, connect to last byte) | ${da.length} | ${ma.toFixed(0)} | ${mb.toFixed(0)} | | ${(ma / mb).toFixed(2)}× |`, '');
  const added = pct(s('get.preview'), 50) - pct(s('get.sandbox'), 50);
  const addedWs = pct(s('ws.preview'), 50) - pct(s('ws.sandbox'), 50);
  md.push(`- target "under ${TARGET_ADDED_MS} ms added per request p50 on a warm connection": ` +
    `${added < TARGET_ADDED_MS ? 'met' : 'NOT met'} (${signed(added)}; WebSocket round trip ${signed(addedWs)})`);
  md.push(`- target "at least ${TARGET_MIBS} MiB/s for a download": ${ma >= TARGET_MIBS ? 'met' : 'NOT met'} ` +
    `(${ma.toFixed(0)} MiB/s median, ${Math.min(...da).toFixed(0)}–${Math.max(...da).toFixed(0)})`);
  md.push(`- preview listener counters at the end: ${results.metrics}`);
  const all = Object.fromEntries([...series]);
  return { md: md.join('\n') + '\n', json: { info, download_bytes: DOWNLOAD_BYTES, samples_ms: all, metrics: results.metrics } };
}

const results = { metrics: '' };

async function main() {
  const info = machineInfo();
  log(`server ${SERVER_BIN}; machine is shared, numbers are noisy`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-bench-preview-'));
  const configFile = path.join(dir, 'config.json');
  const clientPath = path.join(dir, 'client.cjs');
  writeFileSync(clientPath, CLIENT_JS);
  writeFileSync(configFile, JSON.stringify({
    instance_id: `bench-preview-${process.pid}`,
    pool: { size: 0 },
    preview: { listen: '127.0.0.1:0' },
  }));
  let server;
  let client;
  let sessionId;
  let failure;
  try {
    server = await startHttpServer(['--config', configFile]);
    if (process.env.BENCH_PID_FILE) appendFileSync(process.env.BENCH_PID_FILE, `${server.pid}\n`);
    ({ client } = await connectHttp(server.url));
    sessionId = (await callOk(client, 'run_code', { code: '1+1' })).session_id;
    await startSandboxServers(client, sessionId);
    await measure(client, sessionId, clientPath);
    const metrics = (await getEndpoint(server.url, '/metrics')).text;
    results.metrics = ['connections_total', 'refused_total', 'failed_total', 'bytes_from_sandbox_total']
      .map((name) => `${name} ${metrics.match(new RegExp(`^sandbox_mcp_preview_${name} (\\S+)`, 'm'))?.[1] ?? '?'}`)
      .join(', ');
  } catch (error) {
    failure = error;
    if (server) {
      const lines = server.logText().split('\n').filter((l) => /preview|error|warn/i.test(l)).slice(-20);
      log(`the server's last preview/error lines:\n${lines.join('\n')}`);
    }
  } finally {
    if (client && sessionId) await callOk(client, 'cleanup_session', { session_id: sessionId }).catch(() => {});
    await client?.close().catch(() => {});
    if (server) failure ??= await stopServerChecked(server, 60000);
    rmSync(dir, { recursive: true, force: true });
  }
  finishBenchmark('preview', failure, info, report, log);
}

await main();
