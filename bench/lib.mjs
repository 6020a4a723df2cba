// Helpers shared by the benchmark scripts: timing and summaries, MCP calls that must succeed,
// the docker CLI, and a description of the machine the numbers come from.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVER_BIN, dockerGet, stopServer, waitFor } from '../tests/e2e/harness.mjs';

export const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
export const RESULTS_DIR = process.env.BENCH_RESULTS_DIR || path.join(BENCH_DIR, 'results');
export const SCALE = Number(process.env.BENCH_SCALE || 1); // multiplies every sample count

// --- measuring -------------------------------------------------------------------------------
const nowNs = () => process.hrtime.bigint();

export async function timed(fn) {
  const start = nowNs();
  const value = await fn();
  return { ms: Number(nowNs() - start) / 1e6, value };
}

function percentile(sorted, p) {
  // Nearest rank: with n < 100 samples, p99 is the maximum.
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1];
}

export function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  return {
    n: samples.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean,
    min: sorted[0],
    max: sorted[sorted.length - 1],
  };
}

// --- talking to the server and to docker ------------------------------------------------------
export async function callOk(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) {
    throw new Error(`${name} failed: ${JSON.stringify(result.content ?? result).slice(0, 500)}`);
  }
  return result.structuredContent;
}

// The result's _meta timing breakdown (server_ms, channel_ms, agent_ms, exec_ms) is attached to
// the structured content returned, as `timing`, when the server sent one.
export async function runCodeOk(client, args) {
  const result = await client.callTool({ name: 'run_code', arguments: args });
  const out = result.structuredContent;
  if (result.isError || out.status !== 'success' || out.result !== '2') {
    throw new Error(`run_code("1+1") did not return 2: ${JSON.stringify(result).slice(0, 500)}`);
  }
  return { ...out, timing: result._meta?.['sandbox-mcp/timing'] };
}

// The docker CLI; resolves to its stdout (a Buffer), rejects on a non-zero exit.
export function docker(args, stdin) {
  return new Promise((resolve, reject) => {
    const child = spawn('docker', args, { stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      const stdout = Buffer.concat(out);
      if (code !== 0) {
        reject(new Error(`docker ${args.join(' ')} exited ${code}: ${Buffer.concat(err).toString()}`));
      } else {
        resolve(stdout);
      }
    });
    if (stdin) child.stdin.end(stdin);
  });
}

// Containers (including stopped ones) of the sandbox-mcp server with this pid.
export async function managedContainersOf(pid) {
  const filters = encodeURIComponent(JSON.stringify({
    label: ['sandbox-mcp.managed=1', `sandbox-mcp.pid=${pid}`],
  }));
  const { body } = await dockerGet(`/containers/json?all=1&filters=${filters}`);
  return body;
}

// SIGTERMs a benchmark's server and waits up to `timeoutMs` for its containers to go; the error
// a benchmark must fail with (a bad exit, or a leak), or undefined.
export async function stopServerChecked(server, timeoutMs = 15000) {
  const code = await stopServer(server);
  if (code !== 0) return new Error(`server exited with ${code} after SIGTERM`);
  try {
    await waitFor(async () => (await managedContainersOf(server.pid)).length === 0, timeoutMs,
      'removal of the server\'s containers');
  } catch (e) {
    return new Error(`LEAK: ${e.message}`);
  }
  return undefined;
}

// --- machine info ----------------------------------------------------------------------------
function commandOutput(file, args) {
  try {
    return execFileSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

export function machineInfo() {
  const sdkPackage = new URL('../tests/e2e/node_modules/@modelcontextprotocol/sdk/package.json',
    import.meta.url);
  let sdkVersion = 'unknown';
  try {
    sdkVersion = JSON.parse(readFileSync(sdkPackage, 'utf8')).version;
  } catch { /* reported as unknown */ }
  return {
    date: new Date().toISOString(),
    nproc: commandOutput('nproc', []),
    cpu: os.cpus()[0]?.model ?? 'unknown',
    kernel: `${os.type()} ${os.release()}`,
    docker: commandOutput('docker', ['version', '--format',
      '{{.Server.Version}} (API {{.Server.APIVersion}})']),
    runsc: commandOutput('runsc', ['--version']).split('\n')[0],
    node: process.version,
    sdk: sdkVersion,
    server: SERVER_BIN,
    load_start: os.loadavg().map((x) => x.toFixed(2)).join(' '),
  };
}

// --- formatting -----------------------------------------------------------------------------
// Writes bench/results/<name>.md and <name>.json and prints the Markdown.
export function writeResults(name, md, json) {
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(path.join(RESULTS_DIR, `${name}.md`), md);
  writeFileSync(path.join(RESULTS_DIR, `${name}.json`), JSON.stringify(json, null, 2));
  process.stdout.write(md);
}

// The end of a benchmark script: on `failure`, log it and exit non-zero; else stamp the load at
// the end into `info` and write the report that `report(info)` builds as bench/results/<name>.*.
export function finishBenchmark(name, failure, info, report, log) {
  if (failure) {
    log(`FAILED: ${failure.stack ?? failure}`);
    process.exitCode = 1;
    return;
  }
  info.load_end = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  const { md, json } = report(info);
  writeResults(name, md, json);
}

export const fmt = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
export const fmtRatio = (r) => (r >= 1 ? `${r.toFixed(1)}× faster` : `${(1 / r).toFixed(1)}× slower`);

