// The agent channel measured: frames over the per-sandbox Unix socket (sandbox.agent_channel
// "socket", the default) against the engine's attached stdio ("attach"), two HTTP servers in the
// same run, calls interleaved round by round. Rows: a warm run_code("1+1") (with the server's
// channel_ms, the agent round trip), and upload_file / download_file of 1 MiB and 10 MiB
// (base64 over MCP). Results in bench/results/channel.{md,json}. See bench/README.md.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  SERVER_BIN, connectHttp, startHttpServer, stopServer, waitFor,
} from '../tests/e2e/harness.mjs';
import {
  SCALE, callOk, finishBenchmark, fmt, fmtRatio, machineInfo, managedContainersOf, runCodeOk,
  summarize, timed,
} from './lib.mjs';

const count = (n) => Math.max(2, Math.round(n * SCALE));
const log = (msg) => process.stderr.write(`bench/channel: ${msg}\n`);

const series = new Map();
function record(name, ms) {
  if (!series.has(name)) series.set(name, []);
  series.get(name).push(ms);
}

// A server whose sandboxes use `channel`, with one warm session.
async function startServer(channel) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-bench-'));
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ sandbox: { agent_channel: channel }, pool: { size: 1 } }));
  const server = await startHttpServer(['--config', file]);
  const conn = await connectHttp(server.url);
  const first = await runCodeOk(conn.client, { code: '1+1' });
  return { channel, server, ...conn, sid: first.session_id, cleanupDir: () => rmSync(dir, { recursive: true, force: true }) };
}

function patterned(size, seed) {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i++) bytes[i] = ((i + 1) * seed) >>> 24;
  return bytes;
}

const FILES = [
  { name: '1m', bytes: patterned(1024 * 1024, 2654435761) },
  { name: '10m', bytes: patterned(10 * 1024 * 1024, 2246822519) },
].map((f) => ({ ...f, b64: f.bytes.toString('base64') }));

async function warmRunCode(side, calls) {
  for (let i = 0; i < calls; i++) {
    const { ms, value } = await timed(() => runCodeOk(side.client, { code: '1+1', session_id: side.sid }));
    record(`run_code.${side.channel}`, ms);
    if (value.timing) record(`channel_ms.${side.channel}`, value.timing.channel_ms - value.timing.agent_ms);
  }
}

async function transfer(side, file) {
  const path_ = `/tmp/bench-${file.name}.bin`;
  const up = await timed(() => callOk(side.client, 'upload_file',
    { path: path_, content: file.b64, encoding: 'base64', session_id: side.sid }));
  if (up.value.size !== file.bytes.length) throw new Error(`${side.channel}: upload wrote ${up.value.size} bytes`);
  record(`upload_${file.name}.${side.channel}`, up.ms);
  const down = await timed(() => callOk(side.client, 'download_file',
    { path: path_, encoding: 'base64', session_id: side.sid }));
  if (down.value.content !== file.b64) throw new Error(`${side.channel}: download returned other bytes`);
  record(`download_${file.name}.${side.channel}`, down.ms);
}

function report(info) {
  const stats = Object.fromEntries([...series].map(([k, v]) => [k, summarize(v)]));
  const rows = [
    ['c1', 'run_code("1+1") warm, HTTP', 'run_code'],
    ['c2', 'server <-> agent part of it (channel_ms - agent_ms)', 'channel_ms'],
    ['c3', 'upload_file 1 MiB (base64), HTTP', 'upload_1m'],
    ['c4', 'upload_file 10 MiB (base64), HTTP', 'upload_10m'],
    ['c5', 'download_file 1 MiB (base64), HTTP', 'download_1m'],
    ['c6', 'download_file 10 MiB (base64), HTTP', 'download_10m'],
  ];
  const md = [`# sandbox-mcp agent channel: socket vs attach, ${info.date}`, ''];
  md.push(`- machine: ${info.nproc} CPUs (${info.cpu}), docker ${info.docker}, runsc ${info.runsc}`);
  md.push(`- load average (1/5/15 min): ${info.load_start} at start, ${info.load_end} at end`);
  md.push('- two servers in one run, calls interleaved: sandbox.agent_channel "socket" (the default) and "attach"');
  md.push('- ratio = attach p50 / socket p50 (> 1: the socket is faster); ms, wall-clock on the client', '');
  md.push('| # | measures | n | socket p50 | socket p99 | attach p50 | attach p99 | ratio (p50) |');
  md.push('|---|---|--:|--:|--:|--:|--:|--:|');
  for (const [id, what, key] of rows) {
    const socket = stats[`${key}.socket`];
    const attach = stats[`${key}.attach`];
    if (!socket || !attach) continue;
    md.push(`| ${id} | ${what} | ${socket.n} | ${fmt(socket.p50)} | ${fmt(socket.p99)} | ` +
      `${fmt(attach.p50)} | ${fmt(attach.p99)} | ${fmtRatio(attach.p50 / socket.p50)} |`);
  }
  return { md: `${md.join('\n')}\n`, json: { info, stats, samples: Object.fromEntries(series) } };
}

async function main() {
  const info = machineInfo();
  log(`server ${SERVER_BIN}; machine is shared, numbers are noisy`);
  const sides = [];
  let failure;
  try {
    sides.push(await startServer('socket'));
    sides.push(await startServer('attach'));
    if (process.env.BENCH_PID_FILE) {
      writeFileSync(process.env.BENCH_PID_FILE, `${sides.map((s) => s.server.pid).join('\n')}\n`);
    }
    for (const side of sides) await warmRunCode(side, 20); // warm-up, not recorded below
    series.clear();
    for (let round = 0; round < 10; round++) {
      for (const side of round % 2 ? [...sides].reverse() : sides) await warmRunCode(side, count(20));
    }
    for (let round = 0; round < count(10); round++) {
      for (const file of FILES) {
        for (const side of round % 2 ? [...sides].reverse() : sides) await transfer(side, file);
      }
    }
  } catch (error) {
    failure = error;
  } finally {
    for (const side of sides) {
      await side.client.callTool({ name: 'cleanup_session', arguments: { session_id: side.sid } }).catch(() => {});
      await side.client.close().catch(() => {});
      const code = await stopServer(side.server);
      if (code !== 0) failure ??= new Error(`the ${side.channel} server exited with ${code} after SIGTERM`);
      side.cleanupDir();
      await waitFor(async () => (await managedContainersOf(side.server.pid)).length === 0, 15000,
        `the ${side.channel} server's containers to go`).catch((e) => { failure ??= e; });
    }
  }
  finishBenchmark('channel', failure, info, report, log);
}

await main();
