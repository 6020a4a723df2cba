// Starting a stdio server, as a host does for each conversation: the official 2025-11-25 client
// (@modelcontextprotocol/sdk) against the v2 client (@modelcontextprotocol/client) pinned to
// 2026-07-28 and in auto mode, which first runs a short-lived copy of the server for its
// server/discover probe. Each sample starts a fresh server with the default configuration (warm
// pool of 2) and times: connect(); connect + tools/list (what a host does before the model may
// call a tool); the first run_code("1+1") sent at once; and the first run_code("1+1") sent after a
// pause (a model thinking; the pause is not timed), which should find a warm sandbox. Clients are
// interleaved round by round, so load elsewhere on the machine hits them alike. Every sample checks
// that no container of its servers (the probe's included) remains. Results in
// bench/results/connect.{md,json}. See bench/README.md.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  SERVER_BIN, connectStdio, connectStdioV2, containersOfInstance, waitFor,
} from '../tests/e2e/harness.mjs';
import {
  SCALE, callOk, finishBenchmark, fmt, machineInfo, runCodeOk, summarize, timed,
} from './lib.mjs';

const PAUSE_MS = 3000; // the "model thinking" before the first call of the paused samples
const count = (n) => Math.max(2, Math.round(n * SCALE));
const log = (msg) => process.stderr.write(`bench: ${msg}\n`);

const CLIENTS = [
  { name: 'v1', what: '`@modelcontextprotocol/sdk` (2025-11-25)', connect: (args) => connectStdio(args) },
  {
    name: 'v2_pinned', what: '`@modelcontextprotocol/client` pinned to 2026-07-28',
    connect: (args) => connectStdioV2({ pin: '2026-07-28' }, args),
  },
  { name: 'v2_auto', what: '`@modelcontextprotocol/client` in auto mode', connect: (args) => connectStdioV2('auto', args) },
];

const series = new Map();
function record(name, ms) {
  if (!series.has(name)) series.set(name, []);
  series.get(name).push(ms);
}
const warmCounts = new Map(); // `${client}` -> { warm, total } of the paused first calls

// A config naming its own instance, so the probe's server and the kept one label their containers
// alike and the leak check sees both.
function configFile(dir, round, client, paused) {
  const instanceId = `bench-${client.replace('_', '-')}-${round}${paused ? 'p' : ''}-${process.pid}`;
  const file = path.join(dir, `${instanceId}.json`);
  writeFileSync(file, JSON.stringify({ instance_id: instanceId }));
  return { file, instanceId };
}

async function closeAndCheck(side, instanceId) {
  const pid = side.transport.pid;
  await side.client.close();
  if (pid) {
    await waitFor(() => {
      try { process.kill(pid, 0); return false; } catch { return true; }
    }, 30000, `stdio server (pid ${pid}) to exit`);
  }
  const left = await containersOfInstance(instanceId);
  if (left.length) {
    throw new Error(`LEAK: ${left.length} container(s) of instance ${instanceId} remain after its servers exited`);
  }
}

async function sample(dir, round, client, paused) {
  const { file, instanceId } = configFile(dir, round, client.name, paused);
  const connected = await timed(() => client.connect(['--config', file]));
  const side = connected.value;
  try {
    const listed = await timed(() => side.client.listTools());
    if (!listed.value.tools.some((t) => t.name === 'run_code')) throw new Error('tools/list has no run_code');
    if (paused) await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
    const call = await timed(() => runCodeOk(side.client, { code: '1+1' }));
    const stats = await callOk(side.client, 'get_session_stats', { session_id: call.value.session_id });
    const ready = connected.ms + listed.ms;
    if (paused) {
      record(`${client.name}.first_call_paused`, ready + call.ms);
      const counts = warmCounts.get(client.name) ?? { warm: 0, total: 0 };
      counts.total += 1;
      if (stats.warm_start) counts.warm += 1;
      warmCounts.set(client.name, counts);
    } else {
      record(`${client.name}.connect`, connected.ms);
      record(`${client.name}.ready`, ready);
      record(`${client.name}.first_call_at_once`, ready + call.ms);
    }
    await callOk(side.client, 'cleanup_session', { session_id: call.value.session_id });
  } finally {
    await closeAndCheck(side, instanceId);
  }
}

const COLUMNS = [
  ['connect', 'connect()'],
  ['ready', 'connect + tools/list'],
  ['first_call_at_once', '+ run_code("1+1") at once'],
  ['first_call_paused', `+ run_code("1+1") after a ${PAUSE_MS / 1000} s pause (not timed)`],
];

function report(info) {
  const summaries = {};
  for (const [name, samples] of series) summaries[name] = summarize(samples);
  const p50 = (client, column) => summaries[`${client}.${column}`]?.p50;
  const cell = (client, column) => {
    const ms = p50(client, column);
    const base = p50('v1', column);
    if (ms === undefined) return 'n/a';
    return client === 'v1' || base === undefined ? fmt(ms) : `${fmt(ms)} (${(ms / base).toFixed(2)}×)`;
  };
  const lines = [
    '# Stdio connect: the 2025-11-25 client against the 2026-07-28 client',
    '',
    `Machine: ${info.nproc} cores, ${info.cpu}; load ${info.load_start} → ${info.load_end}. ` +
      `Server ${SERVER_BIN}, default configuration (warm pool of 2). A fresh server per sample; ` +
      'p50 ms over the samples (n in the JSON), wall-clock in the client; in brackets the ratio ' +
      'to the v1 client measured in the same run (below 1: faster).',
    '',
    `| client | ${COLUMNS.map(([, title]) => title).join(' | ')} | warm after the pause |`,
    `|---|${COLUMNS.map(() => '---:').join('|')}|---:|`,
  ];
  for (const client of CLIENTS) {
    const counts = warmCounts.get(client.name) ?? { warm: 0, total: 0 };
    lines.push(`| ${client.what} | ${COLUMNS.map(([column]) => cell(client.name, column)).join(' | ')} | ` +
      `${counts.warm}/${counts.total} |`);
  }
  lines.push('', 'The v2 client\'s connect includes its server/discover probe: a copy of the server ' +
    'started, asked and stopped (its exit awaited) before the server it keeps is started. ' +
    '"at once" creates the sandbox cold in every mode (the pool has not filled yet).', '');
  return {
    md: `${lines.join('\n')}\n`,
    json: { info, pause_ms: PAUSE_MS, summaries, warm: Object.fromEntries(warmCounts),
      samples: Object.fromEntries(series) },
  };
}

async function main() {
  const info = machineInfo();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-bench-connect-'));
  let failure;
  try {
    const rounds = count(6);
    log(`stdio connect: ${rounds} rounds of ${CLIENTS.length} clients, at once and after a pause`);
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < CLIENTS.length; i++) {
        const client = CLIENTS[(i + round) % CLIENTS.length]; // rotate who goes first
        await sample(dir, round, client, false);
        await sample(dir, round, client, true);
      }
    }
  } catch (error) {
    failure = error;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  finishBenchmark('connect', failure, info, report, log);
}

await main();
