// Pausing idle sessions (sessions.pause_after_idle_s) measured on a session with the data stack
// loaded (numpy, pandas, matplotlib and a DataFrame): how long the pause takes and what it writes
// (server log), the memory the engine accounts to the sandbox before it and after it (none: the
// container is gone), and the next call's time to its first result (resume included), against the
// same call on a running session and against rebuilding that state in a new gVisor container
// (`docker run` that does the imports), all in this run. And sessions.persist over stdio: how long
// a SIGTERMed server takes to save a session with that state and exit, and how soon a server
// started again answers the old handle, against a fresh server rebuilding the state.
// Results in bench/results/pause.{md,json}.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  SERVER_BIN, connectHttp, connectStdio, dockerGet, startHttpServer, waitFor, processExited,
} from '../tests/e2e/harness.mjs';
import {
  SCALE, callOk, docker, finishBenchmark, fmt, fmtRatio, machineInfo, stopServerChecked, summarize,
  timed,
} from './lib.mjs';

const IMAGE = process.env.SANDBOX_IMAGE_TAG || 'sandbox-mcp/python:latest';
const BASELINE_LABEL = 'sandbox-mcp.bench=1';
const SETUP_CELL = [
  'import numpy as np, pandas as pd, matplotlib.pyplot as plt',
  'df = pd.DataFrame({"k": np.arange(200_000) % 97, "v": np.random.default_rng(1).random(200_000)})',
  'totals = df.groupby("k").v.sum()',
  'len(totals)',
].join('\n');
const NEXT_CELL = 'round(float(totals.sum()), 3) > 0';
const count = (n) => Math.max(2, Math.round(n * SCALE));
const log = (msg) => process.stderr.write(`bench: ${msg}\n`);

const series = new Map();
function record(name, value) {
  if (!series.has(name)) series.set(name, []);
  series.get(name).push(value);
}

async function containerMemoryMiB(id) {
  const { status, body } = await dockerGet(`/containers/${id}/stats?stream=false`);
  if (status !== 200) return 0; // gone: nothing accounted
  const mem = body.memory_stats ?? {};
  const cache = mem.stats?.inactive_file ?? mem.stats?.total_inactive_file ?? 0;
  return ((mem.usage ?? 0) - cache) / (1024 * 1024);
}

// The last "paused in N ms (M MB on disk)" and "resumed in N ms" of `session` in the server log.
function logged(server, session, what) {
  const pattern = what === 'paused'
    ? new RegExp(`session ${session}: paused in (\\d+) ms \\(([\\d.]+) MB on disk\\)`, 'g')
    : new RegExp(`session ${session}: resumed in (\\d+) ms`, 'g');
  const matches = [...server.logText().matchAll(pattern)];
  return matches.length ? matches[matches.length - 1].slice(1).map(Number) : undefined;
}

async function oneCycle(server, client) {
  const setup = await callOk(client, 'run_code', { code: SETUP_CELL, timeout: 120 });
  if (setup.result !== '97') throw new Error(`setup cell: ${JSON.stringify(setup).slice(0, 400)}`);
  const sid = setup.session_id;
  const warm = await timed(() => callOk(client, 'run_code', { code: NEXT_CELL, session_id: sid }));
  record('call_running', warm.ms);
  const running = await callOk(client, 'get_session_stats', { session_id: sid });
  record('memory_running_mib', await containerMemoryMiB(running.container_id));

  await waitFor(async () => logged(server, sid, 'paused') !== undefined, 60000, 'the pause');
  const [pauseMs, megabytes] = logged(server, sid, 'paused');
  record('pause_ms', pauseMs);
  record('snapshot_mb', megabytes);
  record('memory_paused_mib', await containerMemoryMiB(running.container_id));

  const resumed = await timed(() => callOk(client, 'run_code', { code: NEXT_CELL, session_id: sid }));
  if (resumed.value.result !== 'True' || resumed.value.state_lost) {
    throw new Error(`resumed call: ${JSON.stringify(resumed.value).slice(0, 400)}`);
  }
  record('call_after_pause', resumed.ms);
  record('restore_ms', logged(server, sid, 'resumed')[0]);
  // The backend's breakdown of that restore (the last one logged).
  const parts = [...server.logText().matchAll(
    /restored under \S+ from a checkpoint in (\d+) ms \(container (\d+), files (\d+), start (\d+), channel and hello (\d+)\)/g)];
  if (parts.length) {
    const [, , container, files, start, channel] = parts[parts.length - 1].map(Number);
    record('restore_container_ms', container);
    record('restore_files_ms', files);
    record('restore_start_ms', start);
    record('restore_channel_ms', channel);
  }
  // Forks of the running session: to the first result in the new sandbox, one and four at once.
  const one = await timed(async () => {
    const forked = await callOk(client, 'fork_session', { session_id: sid });
    return callOk(client, 'run_code', { code: NEXT_CELL, session_id: forked.sessions[0].session_id });
  });
  if (one.value.result !== 'True') throw new Error(`fork: ${JSON.stringify(one.value).slice(0, 300)}`);
  record('fork_1', one.ms);
  const four = await timed(async () => {
    const forked = await callOk(client, 'fork_session', { session_id: sid, count: 4 });
    if (forked.sessions.length !== 4) throw new Error(`4 forks made ${forked.sessions.length}`);
    return Promise.all(forked.sessions.map((s) => callOk(client, 'run_code', { code: NEXT_CELL, session_id: s.session_id })));
  });
  record('fork_4', four.ms);
  for (const s of (await callOk(client, 'list_sessions', {})).sessions) {
    if (s.session_id !== sid) await callOk(client, 'cleanup_session', { session_id: s.session_id });
  }
  await callOk(client, 'cleanup_session', { session_id: sid });
}

// sessions.persist over stdio: the data stack loaded, SIGTERM (saved), a new server, the old handle.
async function persistCycle(configFile) {
  const first = await connectStdio(['--config', configFile]);
  let sid;
  try {
    const setup = await callOk(first.client, 'run_code', { code: SETUP_CELL, timeout: 120 });
    if (setup.result !== '97') throw new Error(`setup cell: ${JSON.stringify(setup).slice(0, 400)}`);
    sid = setup.session_id;
    const stop = await timed(async () => {
      process.kill(first.transport.pid, 'SIGTERM');
      await waitFor(async () => processExited(first.transport.pid), 60000, 'the server to save and exit');
    });
    record('persist_stop_ms', stop.ms);
  } finally {
    await first.client.close();
  }
  const back = await timed(async () => {
    const again = await connectStdio(['--config', configFile]);
    try {
      return await callOk(again.client, 'run_code', { code: NEXT_CELL, session_id: sid });
    } finally {
      await again.client.close();
    }
  });
  if (back.value.result !== 'True' || back.value.state_lost) {
    throw new Error(`after the restart: ${JSON.stringify(back.value).slice(0, 400)}`);
  }
  record('persist_first_result_ms', back.ms);
  // Without persist: a new server, and the state rebuilt in a new session.
  const rebuilt = await timed(async () => {
    const fresh = await connectStdio(['--config', configFile]);
    try {
      return await callOk(fresh.client, 'run_code', { code: `${SETUP_CELL}\n${NEXT_CELL}`, timeout: 120 });
    } finally {
      await fresh.client.close();
    }
  });
  if (rebuilt.value.result !== 'True') throw new Error(`rebuild: ${JSON.stringify(rebuilt.value).slice(0, 300)}`);
  record('fresh_rebuild_ms', rebuilt.ms);
  // What the last closes saved is not needed: a server that brings it back and ends it.
  const cleanup = await connectStdio(['--config', configFile]);
  try {
    for (const s of (await callOk(cleanup.client, 'list_sessions', {})).sessions) {
      await callOk(cleanup.client, 'cleanup_session', { session_id: s.session_id });
    }
  } finally {
    await cleanup.client.close();
  }
}

function report(info) {
  const stats = Object.fromEntries([...series].map(([k, v]) => [k, summarize(v)]));
  const s = (k) => stats[k];
  const md = [`# sandbox-mcp pause and resume benchmark, ${info.date}`, ''];
  md.push(`- machine: ${info.nproc} CPUs (${info.cpu}), docker ${info.docker}, runsc ${info.runsc}`);
  md.push(`- load average (1/5/15 min): ${info.load_start} at start, ${info.load_end} at end`);
  md.push(`- image ${IMAGE}; a session from the warm pool runs \`${SETUP_CELL.split('\n')[0]}\` and a`);
  md.push('  200,000-row DataFrame groupby; sessions.pause_after_idle_s: 1; HTTP', '');
  md.push('| what | n | p50 | p99 |', '|---|--:|--:|--:|');
  md.push(`| pause: checkpoint, seal, container removed (server log) | ${s('pause_ms').n} | ${fmt(s('pause_ms').p50)} ms | ${fmt(s('pause_ms').p99)} ms |`);
  md.push(`| snapshot on disk | ${s('snapshot_mb').n} | ${s('snapshot_mb').p50.toFixed(1)} MB | ${s('snapshot_mb').p99.toFixed(1)} MB |`);
  md.push(`| sandbox memory, running (engine-reported) | ${s('memory_running_mib').n} | ${s('memory_running_mib').p50.toFixed(0)} MiB | ${s('memory_running_mib').p99.toFixed(0)} MiB |`);
  md.push(`| sandbox memory, paused | ${s('memory_paused_mib').n} | ${s('memory_paused_mib').p50.toFixed(0)} MiB | ${s('memory_paused_mib').p99.toFixed(0)} MiB |`);
  md.push(`| restore: verified copy, container from the checkpoint, channel (server log) | ${s('restore_ms').n} | ${fmt(s('restore_ms').p50)} ms | ${fmt(s('restore_ms').p99)} ms |`);
  for (const [key, what] of [['restore_container_ms', 'create the container (and its attach)'],
    ['restore_files_ms', 'copy and verify the snapshot into it'],
    ['restore_start_ms', 'start from the checkpoint (runsc restore)'],
    ['restore_channel_ms', 'the agent\'s new channel and hello']]) {
    if (s(key)) md.push(`| &nbsp;&nbsp;of which: ${what} | ${s(key).n} | ${fmt(s(key).p50)} ms | ${fmt(s(key).p99)} ms |`);
  }
  md.push('', '| # | the next call (client time to its result) | n | p50 ms | p99 ms | compared with | n | p50 ms | ratio (p50) |');
  md.push('|---|---|--:|--:|--:|---|--:|--:|--:|');
  const resumed = s('call_after_pause');
  const rows = [
    ['the same call on a running session', s('call_running')],
    [`docker run --rm runsc python3 -c 'import numpy, pandas, matplotlib.pyplot' (rebuilding the state)`, s('docker_run_import')],
  ];
  rows.forEach(([what, base], i) => {
    const ratio = resumed.p50 / base.p50;
    md.push(`| 9${'ab'[i]} | on a paused session (resume included) | ${resumed.n} | ${fmt(resumed.p50)} | ${fmt(resumed.p99)} | ` +
      `${what} | ${base.n} | ${fmt(base.p50)} | ${ratio >= 1 ? `${ratio.toFixed(1)}× slower` : `${(1 / ratio).toFixed(1)}× faster`} |`);
  });
  md.push(`| 9c | fork_session of a running session, to the first result in the fork | ${s('fork_1').n} | ${fmt(s('fork_1').p50)} | ${fmt(s('fork_1').p99)} | ` +
    `${rows[1][0]} | ${rows[1][1].n} | ${fmt(rows[1][1].p50)} | ${fmtRatio(rows[1][1].p50 / s('fork_1').p50)} |`);
  md.push(`| 9d | fork_session count 4, to the first result in all four | ${s('fork_4').n} | ${fmt(s('fork_4').p50)} | ${fmt(s('fork_4').p99)} | ` +
    `the same, four times one after another | ${rows[1][1].n} | ${fmt(4 * rows[1][1].p50)} | ${fmtRatio((4 * rows[1][1].p50) / s('fork_4').p50)} |`);
  if (s('persist_first_result_ms')) {
    const fresh = s('fresh_rebuild_ms');
    const back = s('persist_first_result_ms');
    md.push(`| 9e | sessions.persist: a new stdio server, to the result of the next call on the old handle | ${back.n} | ${fmt(back.p50)} | ${fmt(back.p99)} | ` +
      `a new stdio server rebuilding the state in a new session | ${fresh.n} | ${fmt(fresh.p50)} | ${fmtRatio(fresh.p50 / back.p50)} |`);
    const stop = s('persist_stop_ms');
    md.push('', `SIGTERM to exit of a stdio server with persist, saving that session: p50 ${fmt(stop.p50)} ms, p99 ${fmt(stop.p99)} ms (n ${stop.n}).`);
  }
  return { md: md.join('\n') + '\n', json: { info, stats, samples: Object.fromEntries(series) } };
}

async function main() {
  const info = machineInfo();
  log(`server ${SERVER_BIN}; machine is shared, numbers are noisy`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-bench-pause-'));
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({
    pool: { size: 1 },
    sessions: { pause_after_idle_s: 1, snapshot_dir: path.join(dir, 'snapshots') },
  }));
  const persistFile = path.join(dir, 'persist.json');
  writeFileSync(persistFile, JSON.stringify({
    instance_id: `bench-persist-${process.pid}`,
    pool: { size: 0 },
    sessions: { persist: true, pause_after_idle_s: 0, snapshot_dir: path.join(dir, 'persisted') },
  }));
  let failure;
  let server;
  let client;
  try {
    server = await startHttpServer(['--config', file]);
    if (process.env.BENCH_PID_FILE) writeFileSync(process.env.BENCH_PID_FILE, `${server.pid}\n`);
    ({ client } = await connectHttp(server.url));
    for (let round = 0; round < count(5); round++) {
      await oneCycle(server, client);
      record('docker_run_import', (await timed(() => docker(['run', '--rm', '--runtime=runsc',
        '--network', 'none', '--label', BASELINE_LABEL, IMAGE, 'python3', '-c',
        'import numpy, pandas, matplotlib.pyplot']))).ms);
    }
    for (let round = 0; round < count(3); round++) await persistCycle(persistFile);
  } catch (error) {
    failure = error;
  } finally {
    await client?.close().catch(() => {});
    if (server) failure ??= await stopServerChecked(server, 15000);
    rmSync(dir, { recursive: true, force: true });
  }
  finishBenchmark('pause', failure, info, report, log);
}

await main();
