// A figure's round trip measured: a warm run_code that plots and shows a matplotlib figure (it
// comes back as MCP image content), against the same cell closing the figure unshown (what the
// plotting alone costs) and against the way without figures as content: save the PNG in the cell,
// then fetch it with download_file (two calls). Also a DataFrame value's table preview against the
// same cell returning len(df). One server over HTTP, interleaved. Results in
// bench/results/figures.{md,json}. See bench/README.md.
import { writeFileSync } from 'node:fs';
import { SERVER_BIN, connectHttp, startHttpServer, stopServer, waitFor } from '../tests/e2e/harness.mjs';
import {
  SCALE, callOk, finishBenchmark, fmt, fmtRatio, machineInfo, managedContainersOf, summarize, timed,
} from './lib.mjs';

const count = (n) => Math.max(3, Math.round(n * SCALE));
const log = (msg) => process.stderr.write(`bench: ${msg}\n`);
const PLOT = 'fig, ax = plt.subplots(figsize=(6, 4))\nax.plot(np.sin(np.linspace(0, 6, 200)))';
const CELLS = {
  shown: `${PLOT}\nplt.show()`,
  closed: `${PLOT}\nplt.close(fig)`,
  saved: `${PLOT}\nfig.savefig('/tmp/plot.png')\nplt.close(fig)`,
  table: 'df',
  table_len: 'len(df)',
};

const series = new Map();
function record(name, ms) {
  if (!series.has(name)) series.set(name, []);
  series.get(name).push(ms);
}

async function runCell(client, sessionId, name) {
  return callOk(client, 'run_code', { session_id: sessionId, code: CELLS[name] });
}

function report(info) {
  const stats = Object.fromEntries([...series].map(([k, v]) => [k, summarize(v)]));
  const rows = [
    ['8a', 'run_code: plot + plt.show(), figure back as image content', 'shown',
      'the same plot closed unshown (no image)', 'closed'],
    ['8b', '″', 'shown', 'savefig in the cell, then download_file (2 calls)', 'saved_then_download'],
    ['8c', 'run_code: a 1000-row DataFrame as the value (table preview)', 'table',
      'the same cell returning len(df)', 'table_len'],
  ];
  const md = [`# sandbox-mcp figures benchmark, ${info.date}`, ''];
  md.push(`- machine: ${info.nproc} CPUs (${info.cpu}), docker ${info.docker}, runsc ${info.runsc}`);
  md.push(`- load average (1/5/15 min): ${info.load_start} at start, ${info.load_end} at end`);
  md.push('- one warm session over HTTP (official SDK), numpy/matplotlib/pandas imported; calls interleaved', '');
  md.push('| # | sandbox-mcp | n | p50 ms | p99 ms | compared with | n | p50 ms | p99 ms | ratio (p50) |');
  md.push('|---|---|--:|--:|--:|---|--:|--:|--:|--:|');
  for (const [id, what, ours, baseWhat, base] of rows) {
    const a = stats[ours];
    const b = stats[base];
    md.push(`| ${id} | ${what} | ${a.n} | ${fmt(a.p50)} | ${fmt(a.p99)} | ${baseWhat} | ${b.n} | ` +
      `${fmt(b.p50)} | ${fmt(b.p99)} | ${fmtRatio(b.p50 / a.p50)} |`);
  }
  const bytes = stats['shown.image_bytes'];
  md.push('', `Image sent per figure: ${bytes.p50.toFixed(0)} bytes of PNG (p50). ` +
    `Server-reported duration_ms of the shown cell: ${fmt(stats['shown.server_duration'].p50)} ms p50, ` +
    `of the closed one: ${fmt(stats['closed.server_duration'].p50)} ms.`);
  return { md: md.join('\n') + '\n', json: { info, stats, samples: Object.fromEntries(series) } };
}

async function main() {
  const info = machineInfo();
  log(`server ${SERVER_BIN}; machine is shared, numbers are noisy`);
  const server = await startHttpServer();
  if (process.env.BENCH_PID_FILE) writeFileSync(process.env.BENCH_PID_FILE, `${server.pid}\n`);
  const { client } = await connectHttp(server.url);
  let failure;
  try {
    const { session_id: sessionId } = await callOk(client, 'run_code', {
      code: "import numpy as np, pandas as pd, matplotlib.pyplot as plt\n" +
        "df = pd.DataFrame({'id': np.arange(1000), 'x': np.linspace(0, 1, 1000)})",
    });
    const steps = {
      shown: async () => {
        const { ms, value } = await timed(() => client.callTool({
          name: 'run_code', arguments: { session_id: sessionId, code: CELLS.shown },
        }));
        const image = value.content.find((c) => c.type === 'image');
        if (!image) throw new Error(`no image came back: ${JSON.stringify(value).slice(0, 500)}`);
        record('shown', ms);
        record('shown.server_duration', value.structuredContent.duration_ms);
        record('shown.image_bytes', Buffer.from(image.data, 'base64').length);
      },
      closed: async () => {
        const { ms, value } = await timed(() => runCell(client, sessionId, 'closed'));
        if (value.images) throw new Error('the closed figure came back');
        record('closed', ms);
        record('closed.server_duration', value.duration_ms);
      },
      saved_then_download: async () => {
        const { ms } = await timed(async () => {
          await runCell(client, sessionId, 'saved');
          const file = await callOk(client, 'download_file', { session_id: sessionId, path: '/tmp/plot.png' });
          if (!file.content) throw new Error('download_file returned nothing');
        });
        record('saved_then_download', ms);
      },
      table: async () => {
        const { ms, value } = await timed(() => runCell(client, sessionId, 'table'));
        if (value.table?.shape?.[0] !== 1000) throw new Error(`no table summary: ${JSON.stringify(value).slice(0, 300)}`);
        record('table', ms);
      },
      table_len: async () => record('table_len', (await timed(() => runCell(client, sessionId, 'table_len'))).ms),
    };
    const names = Object.keys(steps);
    for (const name of names) await steps[name](); // warm-up, not recorded below
    series.clear();
    for (let round = 0; round < count(30); round++) {
      for (let i = 0; i < names.length; i++) await steps[names[(i + round) % names.length]]();
    }
  } catch (error) {
    failure = error;
  } finally {
    await client.close().catch(() => {});
    const code = await stopServer(server);
    if (code !== 0) failure ??= new Error(`server exited with ${code} after SIGTERM`);
    await waitFor(async () => (await managedContainersOf(server.pid)).length === 0, 15000,
      'removal of the containers').catch((e) => { failure ??= new Error(`LEAK: ${e.message}`); });
  }
  finishBenchmark('figures', failure, info, report, log);
}

await main();
