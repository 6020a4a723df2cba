// Many paused sessions beside sessions.max_sessions running ones: one client makes
// BENCH_PAUSED_SESSIONS (default 100 x BENCH_SCALE) more sessions than max_sessions (64), each
// holding a variable, so that every session past the limit pauses the one idle longest to make
// room. Measured in one run: a new session's time below the limit (the baseline) and past it (a
// pause included); the server's resident memory with 64 running and at the end; the containers
// left running; the disk the snapshots take against the bytes the sessions report; and a resume
// of the oldest paused session, whose variable must come back. Results in
// bench/results/many_paused.{md,json}.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  connectHttp, containersOfInstance, getEndpoint, startHttpServer,
} from '../tests/e2e/harness.mjs';
import {
  SCALE, callOk, finishBenchmark, fmt, fmtRatio, machineInfo, stopServerChecked, summarize, timed,
} from './lib.mjs';

const RUNNING = 64;
const PAUSED = Number(process.env.BENCH_PAUSED_SESSIONS || Math.max(8, Math.round(100 * SCALE)));
const log = (msg) => process.stderr.write(`bench: ${msg}\n`);

const series = new Map();
function record(name, value) {
  if (!series.has(name)) series.set(name, []);
  series.get(name).push(value);
}
const facts = {};

function rssMiB(pid) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
  return Number(line.split(/\s+/)[1]) / 1024;
}

function diskBytes(dir) {
  return Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]);
}

async function newSession(client, i) {
  const made = await timed(() => callOk(client, 'run_code', { code: `x = ${i}\nx` }));
  if (made.value.result !== String(i)) throw new Error(`session ${i}: ${JSON.stringify(made.value).slice(0, 300)}`);
  return made;
}

async function run(server, client, snapshotDir, instanceId) {
  const ids = [];
  for (let i = 0; i < RUNNING; i++) {
    const made = await newSession(client, i);
    record('create_below_limit', made.ms);
    ids.push(made.value.session_id);
  }
  facts.rss_running_mib = rssMiB(server.pid);
  for (let i = RUNNING; i < RUNNING + PAUSED; i++) {
    const made = await newSession(client, i);
    record('create_past_limit', made.ms);
    ids.push(made.value.session_id);
    if ((i - RUNNING + 1) % 100 === 0) log(`${i - RUNNING + 1} of ${PAUSED} sessions past the limit`);
  }
  facts.rss_end_mib = rssMiB(server.pid);
  const listed = (await callOk(client, 'list_sessions', {})).sessions;
  facts.sessions = listed.length;
  facts.paused = listed.filter((s) => s.state === 'paused').length;
  facts.running = listed.filter((s) => s.state === 'running').length;
  facts.reported_snapshot_bytes = listed.reduce((sum, s) => sum + (s.snapshot_bytes ?? 0), 0);
  facts.disk_bytes = diskBytes(snapshotDir);
  facts.containers_running = (await containersOfInstance(instanceId)).filter((c) => c.State === 'running').length;
  // The oldest one has been paused longest; its variable must come back.
  const back = await timed(() => callOk(client, 'run_code', { session_id: ids[0], code: 'x' }));
  if (back.value.result !== '0' || back.value.state_lost) throw new Error(`resume: ${JSON.stringify(back.value).slice(0, 300)}`);
  record('resume_oldest', back.ms);
  facts.metrics_refused = (await getEndpoint(server.url, '/metrics')).text.split('\n')
    .filter((l) => l.startsWith('sandbox_mcp_busy_refusals_total') && !l.endsWith(' 0')).join('; ') || 'none';
}

function report(info) {
  const stats = Object.fromEntries([...series].map(([k, v]) => [k, summarize(v)]));
  const below = stats.create_below_limit;
  const past = stats.create_past_limit;
  const md = [`# sandbox-mcp: ${PAUSED} paused sessions beside ${RUNNING} running, ${info.date}`, ''];
  md.push(`- machine: ${info.nproc} CPUs (${info.cpu}), docker ${info.docker}, runsc ${info.runsc}`);
  md.push(`- load average (1/5/15 min): ${info.load_start} at start, ${info.load_end} at end`);
  md.push(`- one HTTP client; each session runs \`x = i\`; sessions.max_sessions ${RUNNING}; no warm pool`, '');
  md.push('| # | what | n | p50 ms | p99 ms | compared with | n | p50 ms | ratio (p50) |');
  md.push('|---|---|--:|--:|--:|---|--:|--:|--:|');
  md.push(`| 10a | a new session past max_sessions (the idlest one paused for it) | ${past.n} | ${fmt(past.p50)} | ${fmt(past.p99)} | ` +
    `a new session below the limit | ${below.n} | ${fmt(below.p50)} | ${fmtRatio(below.p50 / past.p50)} |`);
  const back = stats.resume_oldest;
  md.push(`| 10b | a call on the session paused longest (its resume included) | ${back.n} | ${fmt(back.p50)} | ${fmt(back.p99)} | ` +
    `a new session below the limit | ${below.n} | ${fmt(below.p50)} | ${fmtRatio(below.p50 / back.p50)} |`, '');
  md.push('| fact | value |', '|---|--:|');
  md.push(`| sessions held / paused / running | ${facts.sessions} / ${facts.paused} / ${facts.running} |`);
  md.push(`| sandbox containers running | ${facts.containers_running} |`);
  md.push(`| server resident memory with ${RUNNING} running / at the end | ${facts.rss_running_mib.toFixed(0)} MiB / ${facts.rss_end_mib.toFixed(0)} MiB |`);
  md.push(`| snapshots on disk (du) / as the sessions report them | ${(facts.disk_bytes / 1e6).toFixed(0)} MB / ${(facts.reported_snapshot_bytes / 1e6).toFixed(0)} MB |`);
  md.push(`| per paused session on disk | ${(facts.disk_bytes / Math.max(1, facts.paused) / 1e6).toFixed(1)} MB |`);
  md.push(`| sessions refused (metrics) | ${facts.metrics_refused} |`);
  return { md: md.join('\n') + '\n', json: { info, stats, facts, samples: Object.fromEntries(series) } };
}

async function main() {
  const info = machineInfo();
  log(`${RUNNING} running + ${PAUSED} paused sessions; machine is shared, numbers are noisy`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-bench-many-paused-'));
  const instanceId = `bench-many-paused-${process.pid}`;
  const snapshotDir = path.join(dir, 'snapshots');
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({
    instance_id: instanceId,
    pool: { size: 0 },
    sessions: {
      max_sessions: RUNNING, max_paused_sessions: PAUSED, max_sessions_per_client: RUNNING + PAUSED,
      pause_after_idle_s: 3600, idle_timeout_s: 86400, snapshot_dir: snapshotDir,
    },
  }));
  let failure;
  let server;
  let client;
  try {
    server = await startHttpServer(['--config', file]);
    if (process.env.BENCH_PID_FILE) writeFileSync(process.env.BENCH_PID_FILE, `${server.pid}\n`);
    ({ client } = await connectHttp(server.url));
    await run(server, client, snapshotDir, instanceId);
  } catch (error) {
    failure = error;
  } finally {
    await client?.close().catch(() => {});
    if (server) failure ??= await stopServerChecked(server, 60000);
    rmSync(dir, { recursive: true, force: true });
  }
  finishBenchmark('many_paused', failure, info, report, log);
}

await main();
