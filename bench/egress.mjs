// The egress gateway measured: what a session with `egress: true` pays for going out through its
// sidecar's proxy, against the same work on the host in the same run. One HTTP server (no warm
// pool, sidecar as a runc container), one session, an upstream on 127.0.0.1 (HTTPS and HTTP, in
// this process) and a package index (tests/e2e/package_index.mjs). Paths, interleaved round by
// round:
//   host, direct           the baseline: Python on the host straight to the upstream;
//   host -> egress.sock    Python on the host through the session's proxy socket: the proxy alone;
//   sandbox -> :3128       Python in the runsc sandbox through 127.0.0.1:3128: the agent's
//                          forwarder, gVisor and the proxy, what sandboxed code sees;
//   sandbox -> egress.sock Python in the sandbox straight to the proxy socket (/run/mcp): the
//                          same without the forwarder (what it costs is the difference).
// 1. small GETs (HTTPS on a new connection each, HTTPS keep-alive in one tunnel, plain HTTP);
// 2. a 100 MiB download (HTTPS and HTTP), MiB/s;
// 3. pip install of 5 small packages (3 named, 2 dependencies) and npm install of 2, in a warm
//    session, against the same install on the host; pip from local wheels (no network) on both
//    sides says how much of it is the network.
// bench/egress_client.py is the measuring client for 1 and 2. Results in
// bench/results/egress.{md,json}. See bench/README.md.
//
// Env: SANDBOX_MCP_BIN (required), BENCH_RESULTS_DIR, BENCH_PID_FILE, BENCH_SCALE.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  SERVER_BIN, connectHttp, dockerGet, sandboxContainerId, startHttpServer,
} from '../tests/e2e/harness.mjs';
import { buildWheel, makeCertificates, startPackageIndex } from '../tests/e2e/package_index.mjs';
import {
  BENCH_DIR, SCALE, callOk, finishBenchmark, fmt, machineInfo, stopServerChecked, summarize, timed,
} from './lib.mjs';

const run = promisify(execFile);
const log = (msg) => process.stderr.write(`bench: ${msg}\n`);
const HOST = '127.0.0.1'; // never any other address
const REQUESTS = Math.max(50, Math.round(500 * SCALE)); // per kind of request and path
const ROUNDS = 10; // the requests come in this many interleaved rounds
const DOWNLOAD_BYTES = 100 * 1024 * 1024;
const DOWNLOADS = Math.max(2, Math.round(4 * SCALE)); // per path and protocol
const PIP_RUNS = Math.max(3, Math.round(5 * SCALE));
const NPM_RUNS = Math.max(2, Math.round(3 * SCALE));
const CLIENT_PY = path.join(BENCH_DIR, 'egress_client.py');
const SANDBOX_CLIENT_DIR = '/tmp/egress-bench';
const INDEX_CA = '/workspace/index-ca.pem';
const WHEELS_DIR = '/tmp/egress-bench/wheels';

const PYTHON_PACKAGES = [
  { name: 'bench-alpha', version: '1.0', source: 'VALUE = "alpha"\n', requires: ['bench-beta>=1'] },
  { name: 'bench-beta', version: '1.2', source: 'VALUE = "beta"\n' },
  { name: 'bench-gamma', version: '0.3', source: 'VALUE = "gamma"\n', requires: ['bench-delta'] },
  { name: 'bench-delta', version: '2.0', source: 'VALUE = "delta"\n' },
  { name: 'bench-epsilon', version: '1.0', source: 'VALUE = "epsilon"\n' },
];
const PIP_NAMES = 'bench-alpha bench-gamma bench-epsilon'; // 5 packages with the dependencies
const PIP_FLAGS = '--no-cache-dir --disable-pip-version-check --no-input --progress-bar off';
const NPM_PACKAGES = [
  { name: 'bench-one', version: '1.0.0', files: { 'index.js': "module.exports = 'one:' + require('bench-two');\n" },
    dependencies: { 'bench-two': '^1.0.0' } },
  { name: 'bench-two', version: '1.1.0', files: { 'index.js': "module.exports = 'two';\n" } },
];
const NPM_FLAGS = '--no-audit --no-fund --no-package-lock --no-update-notifier';

const series = new Map();
function record(name, values) {
  if (!series.has(name)) series.set(name, []);
  series.get(name).push(...values);
}

// --- the upstream ------------------------------------------------------------------------------
const ZEROS = Buffer.alloc(1 << 20);

function answer(req, res) {
  req.resume();
  const zeros = /^\/zeros\/(\d+)$/.exec(req.url);
  if (req.url === '/small') {
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': '3' });
    res.end('ok\n');
  } else if (zeros) {
    let left = Number(zeros[1]);
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(left) });
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
    res.writeHead(404, { 'Content-Length': '0' });
    res.end();
  }
}

// HTTPS and HTTP on 127.0.0.1 (port 0), with a test CA: { httpsPort, httpPort, caPem, close }.
async function startUpstream() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-bench-upstream-'));
  const tls = await makeCertificates(dir);
  const servers = [
    https.createServer({ key: tls.key, cert: tls.cert, noDelay: true }, answer),
    http.createServer({ noDelay: true }, answer),
  ];
  const sockets = new Set();
  for (const server of servers) {
    server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: HOST, port: 0 }, resolve);
    });
  }
  return {
    httpsPort: servers[0].address().port,
    httpPort: servers[1].address().port,
    caPem: tls.caPem,
    close: async () => {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

// --- the three paths ---------------------------------------------------------------------------
// The host's environment without proxy variables, pip settings or CA bundles (requests lets
// REQUESTS_CA_BUNDLE override pip's --cert): the host side goes where it is told, as in the sandbox.
function hostEnv(extra = {}) {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (/^((https?|no|all)_proxy|pip_.*|requests_ca_bundle|curl_ca_bundle)$/i.test(key)) delete env[key];
  }
  return { ...env, PIP_CONFIG_FILE: '/dev/null', ...extra };
}

async function hostClient(config) {
  const { stdout } = await run('python3', [CLIENT_PY, JSON.stringify(config)],
    { env: hostEnv(), maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout.trim().split('\n').pop());
}

// Runs Python in the session; resolves to the JSON its last line of output prints.
async function sandboxPython(client, sessionId, code) {
  const out = await callOk(client, 'run_code', { session_id: sessionId, code, timeout: 600 });
  if (out.status !== 'success') throw new Error(`sandbox code failed:\n${out.stderr}`);
  return JSON.parse(out.stdout.trim().split('\n').pop());
}

function sandboxClient(client, sessionId, config) {
  return sandboxPython(client, sessionId, `import json, sys\n` +
    `sys.path.insert(0, ${JSON.stringify(SANDBOX_CLIENT_DIR)})\nimport egress_client\n` +
    `print(json.dumps(egress_client.run(json.loads(${JSON.stringify(JSON.stringify(config))}))))`);
}

async function shellOk(client, sessionId, command) {
  const out = await callOk(client, 'run_shell', { session_id: sessionId, command, timeout: 300 });
  if (out.exit_code !== 0) throw new Error(`run_shell ${command} exited ${out.exit_code}:\n${out.stdout}\n${out.stderr}`);
  return out;
}

// The session's proxy socket on the host: the sandbox mounts its directory at /run/mcp.
async function hostEgressSocket(client, sessionId) {
  const id = await sandboxContainerId(client, sessionId);
  const { body } = await dockerGet(`/containers/${id}/json`);
  const mount = (body.Mounts ?? []).find((m) => m.Destination === '/run/mcp');
  if (!mount) throw new Error(`the sandbox ${id} has no /run/mcp mount: ${JSON.stringify(body.Mounts)}`);
  const socket = path.join(mount.Source, 'egress.sock');
  if (!fs.statSync(socket).isSocket()) throw new Error(`${socket} is not a socket`);
  return socket;
}

// The proxy's audit records of the session (next to the socket's directory), counted by decision
// and, for errors, by how the connection ended: { "allow": n, "error: <end>": n, ... }.
function auditSummary(socket) {
  const file = path.join(path.dirname(path.dirname(socket)), 'audit.jsonl');
  const counts = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const r = JSON.parse(line);
    if (r.kind !== 'egress') continue;
    const end = r.decision === 'error' ? `: ${r.reason.replace(/^.*the connection ended: /, '')}` : '';
    counts[`${r.decision}${end}`] = (counts[`${r.decision}${end}`] ?? 0) + 1;
  }
  return counts;
}

// --- pip and npm -------------------------------------------------------------------------------
// A shell line that runs `command` and prints its exit code and wall time in ms (date +%s%N).
const timedShell = (command, logFile) =>
  `s=$(date +%s%N); ${command} >${logFile} 2>&1; rc=$?; e=$(date +%s%N); ` +
  `echo "$rc $(( (e - s) / 1000000 ))"; [ $rc = 0 ] || tail -20 ${logFile}`;

async function hostShell(command, env) {
  const { stdout } = await run('bash', ['-c', command], { env: hostEnv(env), maxBuffer: 16 << 20 });
  return stdout;
}

function parseTimed(where, what, stdout) {
  const [rc, ms] = stdout.trim().split('\n')[0].split(' ').map(Number);
  if (rc !== 0) throw new Error(`${what} (${where}) exited ${rc}:\n${stdout}`);
  return ms;
}

function pipCommand(target, source) {
  return `python3 -m pip install ${PIP_FLAGS} --target ${target} ${source} ${PIP_NAMES}`;
}

async function pipRound(ctx, i) {
  const { client, sessionId, index, hostDir, hostWheels } = ctx;
  const indexArgs = (cert) => `--index-url ${index.simpleUrl} --cert ${cert}`;
  const steps = {
    'pip, host': async () => hostShell(timedShell(
      pipCommand(`${hostDir}/pip-${i}`, indexArgs(index.caFile)), `${hostDir}/pip-${i}.log`)),
    'pip, sandbox through the proxy': async () => (await shellOk(client, sessionId, timedShell(
      pipCommand(`/tmp/pip-${i}`, indexArgs(INDEX_CA)), `/tmp/pip-${i}.log`))).stdout,
    'pip, host, local wheels': async () => hostShell(timedShell(
      pipCommand(`${hostDir}/pipw-${i}`, `--no-index --find-links ${hostWheels}`), `${hostDir}/pipw-${i}.log`)),
    'pip, sandbox, local wheels': async () => (await shellOk(client, sessionId, timedShell(
      pipCommand(`/tmp/pipw-${i}`, `--no-index --find-links ${WHEELS_DIR}`), `/tmp/pipw-${i}.log`))).stdout,
  };
  const names = Object.keys(steps);
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + i) % names.length];
    const { ms, value } = await timed(steps[name]);
    record(name, [parseTimed(name, 'pip install', value)]);
    if (name.includes('sandbox')) record(`${name} (run_shell, client)`, [ms]);
  }
}

function npmCommand(dir) {
  return `mkdir -p ${dir} && npm install ${NPM_FLAGS} --prefix ${dir} --cache ${dir}-cache bench-one`;
}

async function npmRound(ctx, i) {
  const { client, sessionId, index, hostDir } = ctx;
  const steps = {
    'npm, host': async () => hostShell(timedShell(npmCommand(`${hostDir}/npm-${i}`), `${hostDir}/npm-${i}.log`),
      { npm_config_registry: index.registryUrl, npm_config_cafile: index.caFile }),
    'npm, sandbox through the proxy': async () => (await shellOk(client, sessionId,
      timedShell(npmCommand(`/tmp/npm-${i}`), `/tmp/npm-${i}.log`))).stdout,
  };
  const names = Object.keys(steps);
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + i) % names.length];
    const { ms, value } = await timed(steps[name]);
    record(name, [parseTimed(name, 'npm install', value)]);
    if (name.includes('sandbox')) record(`${name} (run_shell, client)`, [ms]);
  }
}

// --- the run ----------------------------------------------------------------------------------
const PATHS = ['host, direct', 'host -> egress.sock', 'sandbox -> 127.0.0.1:3128',
  'sandbox -> egress.sock'];

async function measureRequests(ctx) {
  const { upstream, client, sessionId, socket } = ctx;
  const base = { ca: upstream.caPem, https_port: upstream.httpsPort, http_port: upstream.httpPort };
  const configs = {
    'host, direct': { ...base, via: 'direct' },
    'host -> egress.sock': { ...base, via: 'unix', socket },
    'sandbox -> 127.0.0.1:3128': { ...base, via: 'tcp', proxy_port: 3128 },
    'sandbox -> egress.sock': { ...base, via: 'unix', socket: '/run/mcp/egress.sock' },
  };
  const measure = (name, extra) => (name.startsWith('sandbox')
    ? sandboxClient(client, sessionId, { ...configs[name], ...extra })
    : hostClient({ ...configs[name], ...extra }));
  const perRound = Math.ceil(REQUESTS / ROUNDS);
  for (let round = 0; round < ROUNDS; round++) {
    log(`requests: round ${round + 1}/${ROUNDS} (${perRound} of each kind per path)`);
    for (let k = 0; k < PATHS.length; k++) {
      const name = PATHS[(k + round) % PATHS.length];
      for (const [kind, samples] of Object.entries(await measure(name, { n: perRound }))) {
        record(`${kind}|${name}`, samples);
      }
    }
  }
  for (let round = 0; round < DOWNLOADS; round++) {
    log(`downloads: round ${round + 1}/${DOWNLOADS} (${DOWNLOAD_BYTES >> 20} MiB, HTTPS and HTTP, per path)`);
    for (let k = 0; k < PATHS.length; k++) {
      const name = PATHS[(k + round) % PATHS.length];
      for (const [kind, samples] of Object.entries(await measure(name, { download_bytes: DOWNLOAD_BYTES }))) {
        record(`${kind}|${name}`, samples);
      }
    }
  }
}

async function prepareSession(client, upstream, index) {
  const wheels = PYTHON_PACKAGES.map(buildWheel);
  const files = {
    [INDEX_CA]: index.caPem,
    [`${SANDBOX_CLIENT_DIR}/egress_client.py`]: fs.readFileSync(CLIENT_PY, 'utf8'),
  };
  const writes = Object.entries(files).map(([file, text]) =>
    `w(${JSON.stringify(file)}, base64.b64decode(${JSON.stringify(Buffer.from(text).toString('base64'))}))`);
  for (const wheel of wheels) {
    writes.push(`w(${JSON.stringify(`${WHEELS_DIR}/${wheel.file}`)}, base64.b64decode(${JSON.stringify(wheel.body.toString('base64'))}))`);
  }
  const first = await callOk(client, 'run_code', {
    egress: true,
    // The upstreams listen on the host's 127.0.0.1, which in the sandbox is its own loopback
    // (in NO_PROXY by default): this session sends it through the proxy.
    environment: { ...index.clientEnv(INDEX_CA), NO_PROXY: '', no_proxy: '' },
    code: 'import base64, os\n' +
      'def w(p, b):\n    os.makedirs(os.path.dirname(p), exist_ok=True)\n    open(p, "wb").write(b)\n' +
      `${writes.join('\n')}\nprint(os.environ["HTTPS_PROXY"])`,
  });
  if (first.stdout.trim() !== 'http://127.0.0.1:3128') throw new Error(`no proxy in the session: ${first.stdout}`);
  return { sessionId: first.session_id, wheels };
}

async function versions(client, sessionId) {
  const line = 'echo "$(python3 --version) pip $(python3 -m pip --version | cut -d" " -f2), node $(node --version) npm $(npm --version)"';
  const sandbox = (await shellOk(client, sessionId, line)).stdout.trim();
  const host = (await hostShell(line)).trim();
  return { sandbox, host };
}

async function main() {
  const info = machineInfo();
  log(`server ${SERVER_BIN}; the machine is shared, numbers are noisy`);
  const upstream = await startUpstream();
  const index = await startPackageIndex({ python: PYTHON_PACKAGES, npm: NPM_PACKAGES });
  const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-bench-egress-'));
  const configFile = path.join(hostDir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify({
    pool: { size: 0 },
    egress: { enabled: true, allow: [upstream.httpsPort, upstream.httpPort, index.port].map((p) => `${HOST}:${p}`) },
  }));
  const server = await startHttpServer(['--config', configFile]);
  if (process.env.BENCH_PID_FILE) fs.appendFileSync(process.env.BENCH_PID_FILE, `${server.pid}\n`);
  const { client } = await connectHttp(server.url);
  let failure;
  try {
    const created = await timed(() => prepareSession(client, upstream, index));
    const { sessionId, wheels } = created.value;
    info.session_create_ms = created.ms;
    const hostWheels = path.join(hostDir, 'wheels');
    fs.mkdirSync(hostWheels);
    for (const wheel of wheels) fs.writeFileSync(path.join(hostWheels, wheel.file), wheel.body);
    const socket = await hostEgressSocket(client, sessionId);
    info.versions = await versions(client, sessionId);
    const ctx = { client, sessionId, upstream, index, socket, hostDir, hostWheels };
    await measureRequests(ctx);
    for (let i = 0; i < PIP_RUNS; i++) {
      log(`pip install: round ${i + 1}/${PIP_RUNS}`);
      await pipRound(ctx, i);
    }
    for (let i = 0; i < NPM_RUNS; i++) {
      log(`npm install: round ${i + 1}/${NPM_RUNS}`);
      await npmRound(ctx, i);
    }
    const stats = await callOk(client, 'get_session_stats', { session_id: sessionId });
    info.egress = stats.mcp?.egress ?? stats.egress;
    info.audit = auditSummary(socket);
    if (info.egress?.denied) throw new Error(`the proxy refused requests: ${JSON.stringify(info.egress)}`);
  } catch (error) {
    failure = error;
  } finally {
    await client.close().catch(() => {});
    const stopped = await stopServerChecked(server);
    failure ??= stopped;
    await upstream.close();
    await index.close();
    fs.rmSync(hostDir, { recursive: true, force: true });
  }
  finishBenchmark('egress', failure, info, report, log);
}

// --- the report -------------------------------------------------------------------------------
const KINDS = [
  ['https_new', 'HTTPS GET, a new connection (tunnel + TLS handshake) each'],
  ['https_open', '… of which opening the stream: TCP connect (direct), or connect + CONNECT until the 200'],
  ['https_keepalive', 'HTTPS GET, keep-alive (one tunnel)'],
  ['http_new', 'HTTP GET, a new connection each (absolute-form through the proxy)'],
];
const DOWNLOAD_KINDS = [['download_https', 'HTTPS'], ['download_http', 'HTTP']];
const INSTALLS = [
  ['pip install, 5 packages from the index', 'pip, host', 'pip, sandbox through the proxy'],
  ['pip install, the same 5 from local wheels (no network)', 'pip, host, local wheels', 'pip, sandbox, local wheels'],
  ['npm install, 2 packages from the registry', 'npm, host', 'npm, sandbox through the proxy'],
];
const met = (ok) => (ok ? 'met' : 'NOT met');
const signed = (ms) => `${ms >= 0 ? '+' : '−'}${fmt(Math.abs(ms))}`;

function report(info) {
  const stats = Object.fromEntries([...series].map(([k, v]) => [k, summarize(v)]));
  const md = [`# sandbox-mcp egress benchmark, ${info.date}`, ''];
  md.push(`- machine: ${info.nproc} CPUs (${info.cpu}), docker ${info.docker}, runsc ${info.runsc}`);
  md.push(`- load average (1/5/15 min): ${info.load_start} at start, ${info.load_end} at end`);
  md.push(`- one session with \`egress: true\` (sidecar as a runc container), created in ${fmt(info.session_create_ms)} ms; ` +
    `upstream and package index on ${HOST}; paths interleaved round by round`);
  md.push(`- host: ${info.versions.host}; sandbox: ${info.versions.sandbox}`, '');

  md.push(`## Requests (${REQUESTS} per row, Python http.client; ms)`, '');
  md.push('| request | path | n | p50 ms | p99 ms | added at p50 vs direct | ratio p50 |');
  md.push('|---|---|--:|--:|--:|--:|--:|');
  for (const [kind, what] of KINDS) {
    const base = stats[`${kind}|${PATHS[0]}`];
    for (const name of PATHS) {
      const s = stats[`${kind}|${name}`];
      const added = name === PATHS[0] ? '—' : `${signed(s.p50 - base.p50)} ms`;
      md.push(`| ${what} | ${name} | ${s.n} | ${fmt(s.p50)} | ${fmt(s.p99)} | ${added} | ${(s.p50 / base.p50).toFixed(2)}× |`);
    }
  }

  md.push('', `## Download of ${DOWNLOAD_BYTES >> 20} MiB (zeros; MiB/s, request to last byte)`, '');
  md.push('| protocol | path | n | p50 MiB/s | slowest MiB/s | vs direct (p50) |');
  md.push('|---|---|--:|--:|--:|--:|');
  for (const [kind, what] of DOWNLOAD_KINDS) {
    const base = stats[`${kind}|${PATHS[0]}`];
    for (const name of PATHS) {
      const s = stats[`${kind}|${name}`];
      md.push(`| ${what} | ${name} | ${s.n} | ${s.p50.toFixed(0)} | ${s.min.toFixed(0)} | ${(s.p50 / base.p50).toFixed(2)}× |`);
    }
  }

  md.push('', '## Package installs in a warm session (ms, wall time of the command; `--target` a new directory each run)', '');
  md.push('| install | host n | host p50 | host p99 | sandbox n | sandbox p50 | sandbox p99 | sandbox / host (p50) | run_shell on the client p50 |');
  md.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const [what, host, sandbox] of INSTALLS) {
    const h = stats[host];
    const s = stats[sandbox];
    const wall = stats[`${sandbox} (run_shell, client)`];
    md.push(`| ${what} | ${h.n} | ${fmt(h.p50)} | ${fmt(h.p99)} | ${s.n} | ${fmt(s.p50)} | ${fmt(s.p99)} | ` +
      `${(s.p50 / h.p50).toFixed(2)}× | ${fmt(wall.p50)} |`);
  }

  const added = (kind, name) => stats[`${kind}|${name}`].p50 - stats[`${kind}|${PATHS[0]}`].p50;
  const sandboxHttps = stats[`download_https|${PATHS[2]}`].p50;
  const pip = stats['pip, sandbox through the proxy'].p50;
  md.push('', '## Goals (reported, not asserted)', '');
  md.push('- the proxy adds under 1 ms p50 to a request (added p50 vs direct):');
  for (const name of PATHS.slice(1)) {
    const parts = KINDS.map(([kind]) => {
      const ms = added(kind, name);
      return `${kind} ${signed(ms)} ms (${met(ms < 1)})`;
    });
    md.push(`  - ${name}: ${parts.join(', ')}`);
  }
  md.push(`- a ${DOWNLOAD_BYTES >> 20} MiB download over 100 MiB/s from the sandbox: ${sandboxHttps.toFixed(0)} MiB/s (HTTPS p50): ${met(sandboxHttps > 100)}`);
  md.push(`- pip install of 5 small packages in a warm session under 5 s: ${fmt(pip)} ms p50: ${met(pip < 5000)} ` +
    `(index p50 − local wheels p50: ${signed(stats['pip, sandbox through the proxy'].p50 - stats['pip, sandbox, local wheels'].p50)} ms ` +
    `in the sandbox, ${signed(stats['pip, host'].p50 - stats['pip, host, local wheels'].p50)} ms on the host)`);
  if (info.egress) md.push('', `Session egress counters at the end: ${JSON.stringify(info.egress)}`);
  if (info.audit) md.push('', `The proxy's audit records by decision (errors by how the connection ended): ${JSON.stringify(info.audit)}`);
  return { md: `${md.join('\n')}\n`, json: { info, stats, samples: Object.fromEntries(series) } };
}

await main();
