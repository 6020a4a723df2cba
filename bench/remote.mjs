// A remote engine measured: a server whose engine is the TLS-only second dockerd of
// scripts/tls_dockerd.sh (docker.host tcp://127.0.0.1:PORT with client certificates; frames over
// the engine's attach stream, relayed through a socketpair) against a server on the local engine
// (default configuration: Unix socket, per-sandbox channel socket). Two HTTP servers in one run,
// both with pool.size 0, calls interleaved round by round. Rows: a warm run_code("1+1") (with the
// server <-> agent part of it from the result's timing), a new session's first run_code (cold:
// container create, start, attach), and upload_file / download_file of 1 MiB (base64 over MCP).
// bench/run.sh starts the TLS engine and exports SANDBOX_TLS_ENGINE_*. Results in
// bench/results/remote.{md,json}. See bench/README.md.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import {
  SERVER_BIN, connectHttp, dockerGet, startHttpServer, stopServer, waitFor,
} from '../tests/e2e/harness.mjs';
import {
  SCALE, callOk, fmt, fmtRatio, machineInfo, managedContainersOf, runCodeOk, summarize, timed,
  writeResults,
} from './lib.mjs';

const count = (n) => Math.max(2, Math.round(n * SCALE));
const log = (msg) => process.stderr.write(`bench/remote: ${msg}\n`);

const TLS_HOST = process.env.SANDBOX_TLS_ENGINE_HOST;
const TLS_CERTS = process.env.SANDBOX_TLS_ENGINE_CERTS;
const TLS_SOCKET = process.env.SANDBOX_TLS_ENGINE_SOCKET;
const ROUNDS = count(16);
const WARM_CALLS_PER_ROUND = 20;

const series = new Map();
function record(name, ms) {
  if (!series.has(name)) series.set(name, []);
  series.get(name).push(ms);
}

// GET on the TLS engine's private Unix socket: the bench's view of "the remote engine", the way
// tests/e2e/fleet.test.mjs looks at it.
function tlsEngineGet(path_) {
  return new Promise((resolve, reject) => {
    http.get({ socketPath: TLS_SOCKET, path: `/v1.41${path_}` }, (res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`TLS engine GET ${path_}: HTTP ${res.statusCode} ${body}`));
        else resolve(JSON.parse(body));
      });
    }).on('error', reject);
  });
}

const filtersParam = (filter) => encodeURIComponent(JSON.stringify(filter));

// The two sides: each knows how to list containers on its own engine.
const SIDES = [
  {
    name: 'local',
    docker: undefined,
    containers: async (filter) => (await dockerGet(`/containers/json?all=1&filters=${filtersParam(filter)}`)).body,
  },
  {
    name: 'remote',
    docker: {
      host: TLS_HOST,
      tls: { ca_file: `${TLS_CERTS}/ca.pem`, cert_file: `${TLS_CERTS}/client.pem`, key_file: `${TLS_CERTS}/client-key.pem` },
    },
    containers: (filter) => tlsEngineGet(`/containers/json?all=1&filters=${filtersParam(filter)}`),
  },
];

// bench/run.sh stops these servers if this script dies, and checks their containers are gone.
function notePids() {
  const pids = SIDES.map((s) => s.server?.pid).filter(Boolean);
  if (process.env.BENCH_PID_FILE) writeFileSync(process.env.BENCH_PID_FILE, `${pids.join('\n')}\n`);
}

// Starts `side`'s server (its own instance id, no warm pool) and opens one warm session.
async function startServer(side) {
  side.instanceId = `bench-${side.name}-${process.pid}`;
  side.dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-bench-'));
  const file = path.join(side.dir, 'config.json');
  writeFileSync(file, JSON.stringify({
    instance_id: side.instanceId,
    pool: { size: 0 },
    ...(side.docker ? { docker: side.docker } : {}),
  }));
  const volumesBefore = await agentVolumes(side);
  const start = await timed(() => startHttpServer(['--config', file]));
  side.server = start.value;
  side.startMs = start.ms;
  notePids();
  // A remote server prepares the agent volume on its engine before it listens: a new agent build
  // means filling a new volume (once per engine).
  side.filledAgentVolume = (await agentVolumes(side)).some((v) => !volumesBefore.includes(v));
  Object.assign(side, await connectHttp(side.server.url));
  const first = await timed(() => runCodeOk(side.client, { code: '1+1' }));
  side.sid = first.value.session_id;
  side.firstSessionMs = first.ms;
  const stats = await callOk(side.client, 'get_session_stats', { session_id: side.sid });
  log(`${side.name}: server pid ${side.server.pid}, instance ${side.instanceId}, session ${side.sid} ` +
    `in container ${stats.container_id.slice(0, 12)} (${stats.runtime}); started in ${fmt(side.startMs)} ms` +
    `${side.filledAgentVolume ? ' (filled a new agent volume)' : ''}, first run_code ${fmt(first.ms)} ms`);
}

function patterned(size, seed) {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i++) bytes[i] = ((i + 1) * seed) >>> 24;
  return bytes;
}

const FILE_1M = patterned(1024 * 1024, 2654435761);
const FILE_1M_B64 = FILE_1M.toString('base64');

async function warmRunCode(side, calls) {
  for (let i = 0; i < calls; i++) {
    const { ms, value } = await timed(() => runCodeOk(side.client, { code: '1+1', session_id: side.sid }));
    record(`run_code.${side.name}`, ms);
    if (value.timing) record(`channel_ms.${side.name}`, value.timing.channel_ms - value.timing.agent_ms);
  }
}

// A new session's first run_code. With pool.size 0 its container is created, started and
// attached on the side's engine. Then cleanup_session, and a wait until the engine no longer
// lists the container, so its teardown does not overlap the next measurement.
async function coldSession(side) {
  const { ms, value } = await timed(() => runCodeOk(side.client, { code: '1+1' }));
  if (!value.session_created) throw new Error(`${side.name}: run_code without session_id made no new session`);
  record(`cold_run_code.${side.name}`, ms);
  const stats = await callOk(side.client, 'get_session_stats', { session_id: value.session_id });
  if (stats.warm_start !== false) throw new Error(`${side.name}: expected a cold session, got warm_start ${stats.warm_start}`);
  const cleanup = await timed(() => callOk(side.client, 'cleanup_session', { session_id: value.session_id }));
  record(`cleanup_session.${side.name}`, cleanup.ms);
  await waitFor(async () => (await side.containers({ id: [stats.container_id] })).length === 0, 15000,
    `${side.name}: removal of the container of ${value.session_id}`);
}

async function transfer(side) {
  const file = '/tmp/bench-1m.bin';
  const up = await timed(() => callOk(side.client, 'upload_file',
    { path: file, content: FILE_1M_B64, encoding: 'base64', session_id: side.sid }));
  if (up.value.size !== FILE_1M.length) throw new Error(`${side.name}: upload wrote ${up.value.size} bytes`);
  record(`upload_1m.${side.name}`, up.ms);
  const down = await timed(() => callOk(side.client, 'download_file',
    { path: file, encoding: 'base64', session_id: side.sid }));
  if (down.value.content !== FILE_1M_B64) throw new Error(`${side.name}: download returned other bytes`);
  record(`download_1m.${side.name}`, down.ms);
}

// Names of the agent volumes on `side`'s engine (a local server bind-mounts the agent instead).
async function agentVolumes(side) {
  if (side.name === 'local') return [];
  const found = await tlsEngineGet(`/volumes?filters=${filtersParam({ label: ['sandbox-mcp.agent-volume'] })}`);
  return (found.Volumes ?? []).map((v) => v.Name);
}

// Containers of `side`'s server still on its engine: on the local engine by the server's pid
// label, on the TLS engine by its instance label.
function containersLeft(side) {
  return side.name === 'local'
    ? managedContainersOf(side.server.pid)
    : side.containers({ label: [`sandbox-mcp.instance=${side.instanceId}`] });
}

function report(info) {
  const stats = Object.fromEntries([...series].map(([k, v]) => [k, summarize(v)]));
  const rows = [
    ['r1', 'run_code("1+1") warm, HTTP', 'run_code'],
    ['r2', 'server <-> agent part of it (channel_ms - agent_ms)', 'channel_ms'],
    ['r3', 'new session: its first run_code("1+1"), cold (pool.size 0)', 'cold_run_code'],
    ['r4', 'upload_file 1 MiB (base64), HTTP', 'upload_1m'],
    ['r5', 'download_file 1 MiB (base64), HTTP', 'download_1m'],
  ];
  const md = [`# sandbox-mcp on a remote engine (TLS) vs the local engine, ${info.date}`, ''];
  md.push(`- machine: ${info.nproc} CPUs (${info.cpu}), docker ${info.docker}, runsc ${info.runsc}`);
  md.push(`- load average (1/5/15 min): ${info.load_start} at start, ${info.load_end} at end`);
  md.push(`- two servers in one run, calls interleaved in ${ROUNDS} rounds, both with pool.size 0: ` +
    'local = the local engine over its Unix socket (default configuration: channel socket); ' +
    `remote = the second dockerd of scripts/tls_dockerd.sh at ${TLS_HOST} (TLS with client ` +
    'certificates; frames over the attach stream)');
  md.push('- ratio = local p50 / remote p50, said of the remote server ("1.3× slower": its median ' +
    'took 1.3 times as long); added = remote p50 - local p50; ms, wall-clock on the client', '');
  md.push('| # | measures | n | local p50 | local p99 | remote p50 | remote p99 | added (p50) | ratio (p50) |');
  md.push('|---|---|--:|--:|--:|--:|--:|--:|--:|');
  for (const [id, what, key] of rows) {
    const local = stats[`${key}.local`];
    const remote = stats[`${key}.remote`];
    if (!local || !remote) continue;
    md.push(`| ${id} | ${what} | ${local.n} | ${fmt(local.p50)} | ${fmt(local.p99)} | ` +
      `${fmt(remote.p50)} | ${fmt(remote.p99)} | ${fmt(remote.p50 - local.p50)} | ` +
      `${fmtRatio(local.p50 / remote.p50)} |`);
  }
  const cleanup = (name) => stats[`cleanup_session.${name}`];
  md.push('', 'For context:');
  md.push(`- cleanup_session p50: local ${fmt(cleanup('local').p50)} ms, remote ${fmt(cleanup('remote').p50)} ms`);
  md.push(`- server start until it listens (one sample; checks the engine, and on the remote one ` +
    `the agent volume): local ${fmt(info.start_ms.local)} ms, remote ${fmt(info.start_ms.remote)} ms` +
    (info.filled_agent_volume ? ' (this start filled a new agent volume on the TLS engine)' : ' (the agent volume was already there)'));
  md.push(`- each server's first run_code (its first session, cold): local ` +
    `${fmt(info.first_session_ms.local)} ms, remote ${fmt(info.first_session_ms.remote)} ms`);
  md.push('- no container of either server remained on either engine after they stopped');
  return { md: `${md.join('\n')}\n`, json: { info, stats, samples: Object.fromEntries(series) } };
}

async function main() {
  if (!TLS_HOST || !TLS_CERTS || !TLS_SOCKET) {
    throw new Error('no TLS engine: run `scripts/tls_dockerd.sh start && eval "$(scripts/tls_dockerd.sh env)"` ' +
      'first (bench/run.sh remote does)');
  }
  const info = machineInfo();
  log(`server ${SERVER_BIN}; TLS engine ${TLS_HOST}; machine is shared, numbers are noisy`);
  const started = [];
  let failure;
  try {
    for (const side of SIDES) {
      started.push(side);
      await startServer(side);
    }
    for (const side of SIDES) { // warm-up, not recorded below
      await warmRunCode(side, 20);
      await transfer(side);
    }
    series.clear();
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? [...SIDES].reverse() : SIDES;
      for (const side of order) await warmRunCode(side, WARM_CALLS_PER_ROUND);
      for (const side of order) await coldSession(side);
      for (const side of order) await transfer(side);
    }
  } catch (error) {
    failure = error;
  } finally {
    for (const side of started) {
      if (side.client) {
        if (side.sid) await side.client.callTool({ name: 'cleanup_session', arguments: { session_id: side.sid } }).catch(() => {});
        await side.client.close().catch(() => {});
      }
      if (side.server) {
        const code = await stopServer(side.server);
        if (code !== 0) failure ??= new Error(`the ${side.name} server exited with ${code} after SIGTERM`);
        await waitFor(async () => (await containersLeft(side)).length === 0, 15000,
          `the ${side.name} server's containers to go from its engine`).catch(async (e) => {
          const left = await containersLeft(side).catch(() => []);
          failure ??= new Error(`LEAK: ${e.message}: ${left.map((c) => c.Id.slice(0, 12)).join(', ')}`);
        });
      }
      if (side.dir) rmSync(side.dir, { recursive: true, force: true });
    }
  }
  if (failure) {
    log(`FAILED: ${failure.stack ?? failure}`);
    process.exitCode = 1;
    return;
  }
  log('no container of either server remains (local: label sandbox-mcp.pid; TLS engine: sandbox-mcp.instance)');
  info.load_end = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  info.tls_engine = TLS_HOST;
  info.rounds = ROUNDS;
  info.first_session_ms = Object.fromEntries(SIDES.map((s) => [s.name, s.firstSessionMs]));
  info.start_ms = Object.fromEntries(SIDES.map((s) => [s.name, s.startMs]));
  info.filled_agent_volume = SIDES.find((s) => s.name === 'remote').filledAgentVolume;
  info.instance_ids = Object.fromEntries(SIDES.map((s) => [s.name, s.instanceId]));
  const { md, json } = report(info);
  writeResults('remote', md, json);
}

await main().catch((error) => {
  log(`FAILED: ${error.stack ?? error}`);
  process.exitCode = 1;
});
