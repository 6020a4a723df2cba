// The warm pool's Python preload (pool.preload_python) measured: the first
// `import numpy, pandas, matplotlib.pyplot` in a new session from the warm pool, with the default
// preload and with it off (two servers, same run), against a `docker run` that does the imports.
// Also the memory the engine accounts to a pooled sandbox either way. Results in
// bench/results/preload.{md,json}. See bench/README.md.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  SERVER_BIN, connectHttp, dockerGet, startHttpServer, stopServer, waitFor,
} from '../tests/e2e/harness.mjs';
import {
  SCALE, callOk, docker, finishBenchmark, fmt, fmtRatio, machineInfo, managedContainersOf,
  summarize, timed,
} from './lib.mjs';

const IMAGE = process.env.SANDBOX_IMAGE_TAG || 'sandbox-mcp/python:latest';
const BASELINE_LABEL = 'sandbox-mcp.bench=1';
const MODULES = ['numpy', 'pandas', 'matplotlib.pyplot'];
const FIRST_CELL = 'import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt\npd.__name__';
const POOL_SIZE = 2;
const count = (n) => Math.max(2, Math.round(n * SCALE));
const log = (msg) => process.stderr.write(`bench: ${msg}\n`);

const series = new Map();
function record(name, ms) {
  if (!series.has(name)) series.set(name, []);
  series.get(name).push(ms);
}

async function containerMemoryMiB(id) {
  const { body } = await dockerGet(`/containers/${id}/stats?stream=false`);
  const mem = body.memory_stats ?? {};
  const cache = mem.stats?.inactive_file ?? mem.stats?.total_inactive_file ?? 0;
  return ((mem.usage ?? 0) - cache) / (1024 * 1024);
}

// A server with pool.preload_python set to `preload`, logging at debug so that the pool's "ready"
// lines say when a pooled sandbox is really ready (its container exists before the preload ends).
async function startServer(name, preload) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-bench-'));
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ pool: { size: POOL_SIZE, preload_python: preload } }));
  const server = await startHttpServer(['--config', file, '--log-level', 'debug']);
  const conn = await connectHttp(server.url);
  const readyLine = preload.length ? /Python modules preloaded in/g : /pooled sandbox \S+ ready in/g;
  return {
    name, server, ...conn, readyCount: () => (server.logText().match(readyLine) ?? []).length,
    cleanupDir: () => rmSync(dir, { recursive: true, force: true }),
  };
}

// Waits until every sandbox made so far is ready, and as many are made as sessions took + size.
async function poolFull(side, taken) {
  await waitFor(async () => side.readyCount() >= taken + POOL_SIZE, 120000, `${side.name}: warm pool`);
}

async function firstImport(side, taken) {
  await poolFull(side, taken);
  const { ms, value } = await timed(() => callOk(side.client, 'run_code', { code: FIRST_CELL }));
  if (value.status !== 'success' || value.result !== "'pandas'") {
    throw new Error(`${side.name}: the import cell failed: ${JSON.stringify(value).slice(0, 500)}`);
  }
  const stats = await callOk(side.client, 'get_session_stats', { session_id: value.session_id });
  if (!stats.warm_start) throw new Error(`${side.name}: the session did not come from the pool`);
  record(`first_import.${side.name}`, ms);
  record(`first_import.${side.name}.server_duration`, value.duration_ms);
  await callOk(side.client, 'cleanup_session', { session_id: value.session_id });
}

async function pooledMemory(side) {
  const filters = encodeURIComponent(JSON.stringify({
    label: ['sandbox-mcp.pool=1', `sandbox-mcp.pid=${side.server.pid}`],
  }));
  const { body } = await dockerGet(`/containers/json?filters=${filters}`);
  for (const c of body) record(`pooled_memory_mib.${side.name}`, await containerMemoryMiB(c.Id));
}

function report(info) {
  const stats = Object.fromEntries([...series].map(([k, v]) => [k, summarize(v)]));
  const on = stats['first_import.preload'];
  const rows = [
    { what: 'preload off (pool.preload_python: [])', base: stats['first_import.no_preload'] },
    { what: `docker run --rm runsc python3 -c 'import ${MODULES.join(', ')}'`, base: stats.docker_run_import },
  ];
  const md = [`# sandbox-mcp warm-pool preload benchmark, ${info.date}`, ''];
  md.push(`- machine: ${info.nproc} CPUs (${info.cpu}), docker ${info.docker}, runsc ${info.runsc}`);
  md.push(`- load average (1/5/15 min): ${info.load_start} at start, ${info.load_end} at end`);
  md.push(`- image ${IMAGE}; each sample: a new session from a full warm pool, its first run_code:`);
  md.push('  `import numpy as np; import pandas as pd; import matplotlib.pyplot as plt` (HTTP)', '');
  md.push('| # | sandbox-mcp (preload on, the default) | n | p50 ms | p99 ms | compared with | n | p50 ms | p99 ms | ratio (p50) |');
  md.push('|---|---|--:|--:|--:|---|--:|--:|--:|--:|');
  rows.forEach((row, i) => {
    md.push(`| 7${'ab'[i]} | first import in a pooled session | ${on.n} | ${fmt(on.p50)} | ${fmt(on.p99)} | ` +
      `${row.what} | ${row.base.n} | ${fmt(row.base.p50)} | ${fmt(row.base.p99)} | ${fmtRatio(row.base.p50 / on.p50)} |`);
  });
  const mem = (name) => stats[`pooled_memory_mib.${name}`];
  md.push('', '| for context | n | p50 | mean |', '|---|--:|--:|--:|');
  md.push(`| server-reported duration_ms of that cell, preload on | ${stats['first_import.preload.server_duration'].n} | ` +
    `${fmt(stats['first_import.preload.server_duration'].p50)} ms | ${fmt(stats['first_import.preload.server_duration'].mean)} ms |`);
  md.push(`| server-reported duration_ms of that cell, preload off | ${stats['first_import.no_preload.server_duration'].n} | ` +
    `${fmt(stats['first_import.no_preload.server_duration'].p50)} ms | ${fmt(stats['first_import.no_preload.server_duration'].mean)} ms |`);
  md.push(`| memory of a pooled sandbox (engine-reported), preload on | ${mem('preload').n} | ` +
    `${mem('preload').p50.toFixed(0)} MiB | ${mem('preload').mean.toFixed(0)} MiB |`);
  md.push(`| memory of a pooled sandbox (engine-reported), preload off | ${mem('no_preload').n} | ` +
    `${mem('no_preload').p50.toFixed(0)} MiB | ${mem('no_preload').mean.toFixed(0)} MiB |`);
  return { md: md.join('\n') + '\n', json: { info, stats, samples: Object.fromEntries(series) } };
}

async function main() {
  const info = machineInfo();
  log(`server ${SERVER_BIN}; machine is shared, numbers are noisy`);
  const sides = [];
  const pidFile = process.env.BENCH_PID_FILE;
  let failure;
  try {
    sides.push(await startServer('preload', MODULES));
    sides.push(await startServer('no_preload', []));
    if (pidFile) writeFileSync(pidFile, `${sides.map((s) => s.server.pid).join('\n')}\n`);
    const taken = { preload: 0, no_preload: 0 };
    for (const side of sides) {
      await poolFull(side, 0);
      await pooledMemory(side);
    }
    const steps = [
      ...sides.map((side) => async () => {
        await firstImport(side, taken[side.name]);
        taken[side.name] += 1;
      }),
      async () => record('docker_run_import', (await timed(() => docker(['run', '--rm', '--runtime=runsc',
        '--network', 'none', '--label', BASELINE_LABEL, IMAGE, 'python3', '-c',
        `import ${MODULES.join(', ')}`]))).ms),
    ];
    for (let round = 0; round < count(8); round++) {
      for (let i = 0; i < steps.length; i++) await steps[(i + round) % steps.length]();
    }
  } catch (error) {
    failure = error;
  } finally {
    for (const side of sides) {
      await side.client.close().catch(() => {});
      const code = await stopServer(side.server);
      if (code !== 0) failure ??= new Error(`${side.name} server exited with ${code} after SIGTERM`);
      side.cleanupDir();
      await waitFor(async () => (await managedContainersOf(side.server.pid)).length === 0, 15000,
        `removal of ${side.name}'s containers`).catch((e) => { failure ??= new Error(`LEAK: ${e.message}`); });
    }
  }
  finishBenchmark('preload', failure, info, report, log);
}

await main();
