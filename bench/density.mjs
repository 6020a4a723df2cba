// What an idle session costs, with the frozen tier on and off, in one run. One client makes
// BENCH_DENSITY_SESSIONS (default 64 x BENCH_SCALE) sessions that import numpy and pandas and
// hold a variable, then leaves them idle. For each mode (frozen: sessions.freeze_after_idle_s 2;
// running: 0) it measures, on the same machine minutes apart:
//  - host CPU over BENCH_DENSITY_IDLE_S (default 60) s from /proc/stat, and per sandbox from its
//    cgroup (cpuacct), in % of one core; memory per session (the cgroup's charge);
//  - as sessions are added, a call on one active session (p50 of 10): the number of idle sessions
//    at which it takes twice as long as with none;
//  - the first call on each of 16 idle sessions (frozen: the thaw included) against a second call
//    right after (running), p50/p99.
// Then a new session from a warm pool whose sandbox waits frozen against one that waits running,
// and, for comparison, the first call on sessions paused to disk (a resume). Results in
// bench/results/density.{md,json}.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectHttp, dockerGet, getEndpoint, startHttpServer, waitFor } from '../tests/e2e/harness.mjs';
import {
  SCALE, callOk, finishBenchmark, fmt, machineInfo, stopServerChecked, summarize, timed,
} from './lib.mjs';

const SESSIONS = Number(process.env.BENCH_DENSITY_SESSIONS || Math.max(8, Math.round(64 * SCALE)));
const IDLE_S = Number(process.env.BENCH_DENSITY_IDLE_S || 60);
const STEP = Math.max(4, Math.round(SESSIONS / 8));
const PROBES = Math.min(16, SESSIONS);
const PAUSED = Math.min(8, SESSIONS);
const log = (msg) => process.stderr.write(`bench: ${msg}\n`);

const results = { modes: {} };

// --- the host's and the sandboxes' own accounting --------------------------------------------
function hostJiffies() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = fields[3] + (fields[4] ?? 0);
  const total = fields.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

// The file `name` of the container's cgroup under the v1 `controller` (this host: cgroup v1).
async function cgroupFile(containerId, controller, name) {
  const { body } = await dockerGet(`/containers/${containerId}/json`);
  const line = readFileSync(`/proc/${body.State.Pid}/cgroup`, 'utf8').split('\n')
    .find((l) => l.split(':')[1]?.split(',').includes(controller));
  return `/sys/fs/cgroup/${controller}${line.split(':')[2]}/${name}`;
}

const readNumber = (file) => Number(readFileSync(file, 'utf8').trim());

// CPU time (clock ticks) of every process on the host, summed by name: who spends it.
function ticksByName() {
  const out = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/^memfd:.*/, 'memfd (runsc)');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(entry, { name, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch { /* ended meanwhile */ }
  }
  return out;
}

// Host CPU over `seconds` (% of one core), and the processes that used it, by name.
async function hostCpuOver(seconds) {
  const host0 = hostJiffies();
  const procs0 = ticksByName();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const host1 = hostJiffies();
  const procs1 = ticksByName();
  const byName = new Map();
  for (const [pid, now] of procs1) {
    const before = procs0.get(pid);
    const delta = now.ticks - (before?.name === now.name ? before.ticks : now.ticks);
    if (delta > 0) byName.set(now.name, (byName.get(now.name) ?? 0) + delta);
  }
  const hz = 100;
  const top = [...byName].sort((a, b) => b[1] - a[1]).slice(0, 6)
    .map(([name, ticks]) => `${name} ${(ticks / hz / seconds * 100).toFixed(1)}`);
  const pct = ((host1.busy - host0.busy) / (host1.total - host0.total)) * os.cpus().length * 100;
  return { pct, top };
}

async function containerOf(client, sessionId) {
  return (await callOk(client, 'get_session_stats', { session_id: sessionId })).container_id;
}

async function stateCount(server, state) {
  const text = (await getEndpoint(server.url, '/metrics')).text;
  const match = text.match(new RegExp(`^sandbox_mcp_sessions_by_state\\{state="${state}"\\} (\\d+)`, 'm'));
  return match ? Number(match[1]) : 0;
}

async function activeCallP50(client, sessionId) {
  const samples = [];
  for (let i = 0; i < 10; i++) samples.push((await timed(() => callOk(client, 'run_code', { session_id: sessionId, code: 'x' }))).ms);
  return summarize(samples).p50;
}

// --- one server, one mode --------------------------------------------------------------------
async function withServer(name, sessionsConfig, body, pool = { size: 0 }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), `sandbox-mcp-bench-density-${name}-`));
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({
    instance_id: `bench-density-${name}-${process.pid}`,
    pool,
    sessions: {
      max_sessions: SESSIONS + 8, max_sessions_per_client: SESSIONS + 8, idle_timeout_s: 86400,
      snapshot_dir: path.join(dir, 'snapshots'), ...sessionsConfig,
    },
  }));
  let server;
  let client;
  let failure;
  try {
    server = await startHttpServer(['--config', file]);
    if (process.env.BENCH_PID_FILE) writeFileSync(process.env.BENCH_PID_FILE, `${server.pid}\n`);
    ({ client } = await connectHttp(server.url));
    await body(server, client);
  } catch (error) {
    failure = error;
  } finally {
    await client?.close().catch(() => {});
    if (server) failure ??= await stopServerChecked(server, 120000);
    rmSync(dir, { recursive: true, force: true });
  }
  if (failure) throw failure;
}

async function measureMode(mode, freezeAfter) {
  const out = { curve: [], first_call: [], next_call: [] };
  results.modes[mode] = out;
  await withServer(mode, { freeze_after_idle_s: freezeAfter, pause_after_idle_s: 0 }, async (server, client) => {
    if (mode === 'frozen') {
      // The machine with the server and no session: what 64 idle sessions add is above it.
      results.baseline_cpu = await hostCpuOver(Math.min(IDLE_S, 30));
    }
    const active = (await callOk(client, 'run_code', { code: 'x = -1\nx' })).session_id;
    out.baseline_p50 = await activeCallP50(client, active);
    const ids = [];
    for (let i = 0; i < SESSIONS; i++) {
      const made = await callOk(client, 'run_code', { code: `import numpy, pandas\nx = ${i}\nx` });
      if (made.result !== String(i)) throw new Error(`session ${i}: ${JSON.stringify(made).slice(0, 300)}`);
      ids.push(made.session_id);
      if ((i + 1) % STEP === 0 || i + 1 === SESSIONS) {
        await new Promise((r) => setTimeout(r, (freezeAfter + 3) * 1000));  // let them settle (freeze)
        out.curve.push({ idle: i + 1, p50: await activeCallP50(client, active) });
        log(`${mode}: ${i + 1} idle sessions, a call on the active one p50 ${fmt(out.curve.at(-1).p50)} ms`);
      }
    }
    if (freezeAfter > 0) {
      await waitFor(async () => await stateCount(server, 'frozen') >= SESSIONS, 120000, 'every idle session to freeze');
    }
    out.states = {
      running: await stateCount(server, 'running'), frozen: await stateCount(server, 'frozen'),
    };
    const containers = await Promise.all(ids.map((id) => containerOf(client, id)));
    const cpuFiles = await Promise.all(containers.map((c) => cgroupFile(c, 'cpuacct', 'cpuacct.usage')));
    const memFiles = await Promise.all(containers.map((c) => cgroupFile(c, 'memory', 'memory.usage_in_bytes')));
    const cpu0 = cpuFiles.map(readNumber);
    const t0 = process.hrtime.bigint();
    const host = await hostCpuOver(IDLE_S);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu1 = cpuFiles.map(readNumber);
    out.host_cpu_pct = host.pct;
    out.host_cpu_top = host.top;
    out.sandbox_cpu_pct = cpu1.map((v, i) => ((v - cpu0[i]) / 1e9 / seconds) * 100);
    out.memory_mib = memFiles.map((f) => readNumber(f) / 2 ** 20);
    // The first call on idle sessions (frozen: thawed by it), then a second right after.
    for (const id of ids.slice(0, PROBES)) {
      const first = await timed(() => callOk(client, 'run_code', { session_id: id, code: 'x' }));
      const next = await timed(() => callOk(client, 'run_code', { session_id: id, code: 'x' }));
      out.first_call.push(first.ms);
      out.next_call.push(next.ms);
    }
  });
}

// A new session from the warm pool (size 1) while its sandbox waits frozen or running: the
// claim and the first call, `POOL_CLAIMS` times, each after the pool refilled (and froze).
const POOL_CLAIMS = Math.max(3, Math.round(8 * SCALE));
async function measurePoolClaim(mode, freezeAfter) {
  const claims = [];
  results.modes[mode].pool_claim = claims;
  await withServer(`pool-${mode}`, { freeze_after_idle_s: freezeAfter, pause_after_idle_s: 0 }, async (server, client) => {
    for (let i = 0; i < POOL_CLAIMS; i++) {
      await waitFor(async () => {
        const text = (await getEndpoint(server.url, '/metrics')).text;
        return /^sandbox_mcp_pool_ready 1$/m.test(text);
      }, 60000, 'the pool to refill');
      await new Promise((r) => setTimeout(r, 1500));  // frozen right after it is made
      const made = await timed(() => callOk(client, 'run_code', { code: '1' }));
      claims.push(made.ms);
      await callOk(client, 'cleanup_session', { session_id: made.value.session_id });
    }
  }, { size: 1 });
}

async function measureResume() {
  const out = { resume: [], next_call: [] };
  results.modes.paused = out;
  await withServer('paused', { freeze_after_idle_s: 0, pause_after_idle_s: 2 }, async (server, client) => {
    const ids = [];
    for (let i = 0; i < PAUSED; i++) {
      ids.push((await callOk(client, 'run_code', { code: `import numpy, pandas\nx = ${i}\nx` })).session_id);
    }
    await waitFor(async () => await stateCount(server, 'paused') >= PAUSED, 300000, 'the sessions to pause');
    for (const id of ids) {
      out.resume.push((await timed(() => callOk(client, 'run_code', { session_id: id, code: 'x' }))).ms);
      out.next_call.push((await timed(() => callOk(client, 'run_code', { session_id: id, code: 'x' }))).ms);
    }
  });
}

// --- report ----------------------------------------------------------------------------------
const sum = (list) => list.reduce((a, b) => a + b, 0);
const median = (list) => summarize(list).p50;

// The number of idle sessions at which the active call's p50 first reached twice its baseline.
function doublingPoint(mode) {
  const hit = mode.curve.find((point) => point.p50 >= 2 * mode.baseline_p50);
  return hit ? `${hit.idle}` : `more than ${mode.curve.at(-1)?.idle ?? 0}`;
}

function report(info) {
  const { frozen, running, paused } = results.modes;
  const md = [`# sandbox-mcp: idle sessions, frozen and running, ${info.date}`, ''];
  md.push(`- machine: ${info.nproc} CPUs (${info.cpu}), docker ${info.docker}, runsc ${info.runsc}`);
  md.push(`- load average (1/5/15 min): ${info.load_start} at start, ${info.load_end} at end`);
  md.push(`- ${SESSIONS} sessions, each with numpy and pandas imported and a variable, then idle; CPU over ${IDLE_S} s; one HTTP client; no warm pool`, '');
  md.push('| | frozen tier on (`freeze_after_idle_s` 2) | off (running) | ratio |', '|---|--:|--:|--:|');
  const base = results.baseline_cpu.pct;
  md.push(`| host CPU, the server and no session (% of one core) | ${base.toFixed(1)} | | |`);
  md.push(`| host CPU, ${SESSIONS} idle sessions (% of one core) | ${frozen.host_cpu_pct.toFixed(1)} | ${running.host_cpu_pct.toFixed(1)} | ${(running.host_cpu_pct / Math.max(0.01, frozen.host_cpu_pct)).toFixed(0)}x less |`);
  md.push(`| ... above the machine with no session | ${(frozen.host_cpu_pct - base).toFixed(1)} | ${(running.host_cpu_pct - base).toFixed(1)} | |`);
  md.push(`| per sandbox, mean (% of one core) | ${(sum(frozen.sandbox_cpu_pct) / SESSIONS).toFixed(3)} | ${(sum(running.sandbox_cpu_pct) / SESSIONS).toFixed(2)} | |`);
  md.push(`| memory per session, median (MiB) | ${median(frozen.memory_mib).toFixed(0)} | ${median(running.memory_mib).toFixed(0)} | |`);
  md.push(`| sessions by state at the end (running / frozen) | ${frozen.states.running} / ${frozen.states.frozen} | ${running.states.running} / ${running.states.frozen} | |`);
  md.push(`| a call on an active session, no idle ones (p50 ms) | ${fmt(frozen.baseline_p50)} | ${fmt(running.baseline_p50)} | |`);
  md.push(`| ... with ${SESSIONS} idle ones (p50 ms) | ${fmt(frozen.curve.at(-1).p50)} | ${fmt(running.curve.at(-1).p50)} | |`);
  md.push(`| idle sessions before that call takes twice as long | ${doublingPoint(frozen)} | ${doublingPoint(running)} | |`, '');
  const f = summarize(frozen.first_call);
  const fn = summarize(frozen.next_call);
  const r = summarize(running.first_call);
  const p = summarize(paused.resume);
  md.push('| a call on an idle session | n | p50 ms | p99 ms | ratio (p50) to the call right after, on the same session |', '|---|--:|--:|--:|--:|');
  md.push(`| frozen: the first (its thaw included) | ${f.n} | ${fmt(f.p50)} | ${fmt(f.p99)} | ${(f.p50 / fn.p50).toFixed(2)}x |`);
  md.push(`| frozen: the next, now running | ${fn.n} | ${fmt(fn.p50)} | ${fmt(fn.p99)} | 1x |`);
  md.push(`| tier off: the first | ${r.n} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${(r.p50 / summarize(running.next_call).p50).toFixed(2)}x |`);
  md.push(`| paused to disk (a resume) | ${p.n} | ${fmt(p.p50)} | ${fmt(p.p99)} | ${(p.p50 / fn.p50).toFixed(0)}x |`, '');
  const pf = summarize(frozen.pool_claim);
  const pr = summarize(running.pool_claim);
  md.push('| a new session from the warm pool (claim and first call) | n | p50 ms | p99 ms | ratio (p50) |', '|---|--:|--:|--:|--:|');
  md.push(`| the pooled sandbox waited frozen | ${pf.n} | ${fmt(pf.p50)} | ${fmt(pf.p99)} | ${(pf.p50 / pr.p50).toFixed(2)}x |`);
  md.push(`| it waited running (tier off) | ${pr.n} | ${fmt(pr.p50)} | ${fmt(pr.p99)} | 1x |`, '');
  md.push(`Where the host's CPU went while the ${SESSIONS} sessions idled (% of one core, by process name; \`exe\` is runsc's sandbox, \`process_api\` and \`kdamond\` are this VM's own):`, '');
  md.push(`- no session: ${results.baseline_cpu.top.join(', ')}`);
  md.push(`- frozen: ${frozen.host_cpu_top.join(', ')}`);
  md.push(`- running: ${running.host_cpu_top.join(', ')}`, '');
  md.push('| idle sessions | ' + frozen.curve.map((c) => c.idle).join(' | ') + ' |');
  md.push('|---|' + frozen.curve.map(() => '--:').join('|') + '|');
  md.push('| frozen: active call p50 ms | ' + frozen.curve.map((c) => fmt(c.p50)).join(' | ') + ' |');
  md.push('| running: active call p50 ms | ' + running.curve.map((c) => fmt(c.p50)).join(' | ') + ' |');
  return { md: md.join('\n') + '\n', json: { info, sessions: SESSIONS, idle_s: IDLE_S, results } };
}

async function main() {
  const info = machineInfo();
  log(`${SESSIONS} data-stack sessions idle for ${IDLE_S} s, frozen tier on then off; machine is shared, numbers are noisy`);
  let failure;
  try {
    await measureMode('frozen', 2);
    await measureMode('running', 0);
    await measurePoolClaim('frozen', 2);
    await measurePoolClaim('running', 0);
    await measureResume();
  } catch (error) {
    failure = error;
  }
  finishBenchmark('density', failure, info, report, log);
}

await main();
