// Latency benchmark of sandbox-mcp against the Docker CLI baselines, driven through the official
// MCP TypeScript client. bench/run.sh builds everything and runs this; see bench/README.md.
//
// Env: SANDBOX_MCP_BIN (required, the server binary), BENCH_RESULTS_DIR (default bench/results),
// BENCH_PID_FILE (optional: server pids are written there so run.sh can clean up after a crash),
// BENCH_SCALE (optional, default 1: multiplies every sample count, e.g. 0.2 for a quick try).
//
// The SDK is imported through tests/e2e/harness.mjs, so it resolves from tests/e2e/node_modules
// (ESM resolves bare specifiers relative to the importing file; NODE_PATH would not work here).
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CallToolResultSchema, CreateTaskResultSchema, SERVER_BIN, connectHttp, connectStdio,
  containersOfSession, dockerGet, startHttpServer, stopServer, waitFor,
} from '../tests/e2e/harness.mjs';
import { buildReport, recordBreakdown } from './bench_report.mjs';
import { startJupyterKernel } from './jupyter.mjs';
import {
  RESULTS_DIR, SCALE, callOk, docker, machineInfo, managedContainersOf, runCodeOk, timed,
} from './lib.mjs';
import { rawHttpCaller } from './raw_http.mjs';

const IMAGE = process.env.SANDBOX_IMAGE_TAG || 'sandbox-mcp/python:latest';
const BASELINE_LABEL = 'sandbox-mcp.bench=1'; // our own `docker run` baselines, for crash cleanup

const count = (n) => Math.max(2, Math.round(n * SCALE));

// Named sample series; every measurement lands in one.
const series = new Map();
function record(name, ms) {
  if (!series.has(name)) series.set(name, []);
  series.get(name).push(ms);
}

// --- talking to docker -----------------------------------------------------------------------
async function timedDocker(name, args, stdin) {
  const { ms, value } = await timed(() => docker(args, stdin));
  record(name, ms);
  return value;
}

function dockerRunArgs(runtime, command) {
  return ['run', '--rm', `--runtime=${runtime}`, '--network', 'none', '--label', BASELINE_LABEL,
    IMAGE, ...command];
}

// Ready sandboxes of the server's warm pool: its pool-labelled containers minus those that
// sessions hold (`claimed`, container ids).
const POOL_SIZE = 2; // the default pool.size, which the benchmark's servers run with
async function pooledReady(serverPid, claimed) {
  const filters = encodeURIComponent(JSON.stringify({
    label: ['sandbox-mcp.pool=1', `sandbox-mcp.pid=${serverPid}`],
  }));
  const { body } = await dockerGet(`/containers/json?filters=${filters}`);
  return body.filter((c) => !claimed.includes(c.Id));
}

// --- phases ----------------------------------------------------------------------------------
// Rows 1 and 2 (+ their baselines): warm run_code over HTTP and stdio, interleaved in rounds with
// `docker exec <that session's container> python3 -c 'print(1+1)'` and a bare Jupyter kernel's
// execute round trip, so a burst of load elsewhere on the machine hits all series alike.
async function warmRunCode(http, stdio, jupyter) {
  const rounds = 10;
  const perRound = count(20);
  const execPerRound = Math.max(1, Math.round(count(30) / rounds));
  for (const side of [http, stdio]) {
    for (let i = 0; i < 20; i++) await runCodeOk(side.client, { code: '1+1', session_id: side.sid });
    await docker(['exec', side.containerId, 'python3', '-c', 'print(1+1)']); // warm the page cache
  }
  const raw = rawHttpCaller(http.url, http.transport);
  for (let i = 0; i < 20; i++) await raw.call('run_code', { code: '1+1', session_id: http.sid });
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < Math.max(1, Math.round(perRound / 2)); i++) {
      const { ms, value } = await timed(() =>
        raw.call('run_code', { code: '1+1', session_id: http.sid }));
      if (value.result !== '2') throw new Error(`raw run_code returned ${JSON.stringify(value)}`);
      record('run_code.raw_http', ms);
    }
    for (const side of [http, stdio]) {
      for (let i = 0; i < perRound; i++) {
        const { ms, value } = await timed(() =>
          runCodeOk(side.client, { code: '1+1', session_id: side.sid }));
        record(`run_code.${side.name}`, ms);
        record(`run_code.${side.name}.server_duration`, value.duration_ms);
        recordBreakdown(record, side.name, ms, value.timing);
      }
    }
    for (const side of [http, stdio]) {
      for (let i = 0; i < execPerRound; i++) {
        const out = await timedDocker(`docker_exec_python.${side.name}`,
          ['exec', side.containerId, 'python3', '-c', 'print(1+1)']);
        if (out.toString() !== '2\n') throw new Error(`docker exec printed ${JSON.stringify(out.toString())}`);
      }
    }
    for (const ms of await jupyter.run(perRound)) record('jupyter_execute', ms);
  }
  raw.close();
}

// Row 6: a task's overhead. run_code("1+1") as an MCP task (tools/call with params.task answered
// by a CreateTaskResult, then tasks/result) against the same call made plainly, interleaved in
// rounds, in the same warm session, over HTTP and stdio.
async function taskRunCode(client, args) {
  const created = await client.request({ method: 'tools/call', params: { name: 'run_code', arguments: args } },
    CreateTaskResultSchema, { task: {} });
  const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
  if (result.isError) throw new Error(`task run_code failed: ${JSON.stringify(result.content)}`);
  return result.structuredContent;
}

async function taskOverhead(http, stdio) {
  const rounds = 5;
  const perRound = count(20);
  for (const side of [http, stdio]) {
    for (let i = 0; i < 10; i++) await taskRunCode(side.client, { code: '1+1', session_id: side.sid });
  }
  for (let round = 0; round < rounds; round++) {
    for (const side of [http, stdio]) {
      for (let i = 0; i < perRound; i++) {
        const plain = await timed(() => runCodeOk(side.client, { code: '1+1', session_id: side.sid }));
        record(`run_code_plain.${side.name}`, plain.ms);
        const task = await timed(() => taskRunCode(side.client, { code: '1+1', session_id: side.sid }));
        if (task.value.result !== '2') throw new Error(`task run_code returned ${JSON.stringify(task.value)}`);
        record(`run_code_task.${side.name}`, task.ms);
      }
    }
  }
}

// Row 3: warm run_shell("true") over HTTP, interleaved with docker exec true.
async function warmRunShell(http) {
  const rounds = 5;
  const perRound = count(20);
  const execPerRound = Math.max(1, Math.round(count(20) / rounds));
  for (let i = 0; i < 10; i++) await callOk(http.client, 'run_shell', { command: 'true', session_id: http.sid });
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < perRound; i++) {
      const { ms, value } = await timed(() =>
        callOk(http.client, 'run_shell', { command: 'true', session_id: http.sid }));
      if (value.exit_code !== 0) throw new Error(`run_shell("true") exited ${value.exit_code}`);
      record('run_shell.http', ms);
      record('run_shell.http.server_duration', value.duration_ms);
    }
    for (let i = 0; i < execPerRound; i++) {
      await timedDocker('docker_exec.run_shell', ['exec', http.containerId, 'true']);
    }
  }
}

// Row 3p: run_shell("true") as an agent calls it, with a pause between calls (a model thinks for
// seconds between tool calls; 100 ms is enough for the sandbox to prepare its next shell). The
// pause is not timed; docker exec gets the same pauses.
async function pacedRunShell(http) {
  const rounds = 5;
  const perRound = count(6);
  const pause = () => new Promise((resolve) => setTimeout(resolve, 100));
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < perRound; i++) {
      await pause();
      const { ms, value } = await timed(() =>
        callOk(http.client, 'run_shell', { command: 'true', session_id: http.sid }));
      if (value.exit_code !== 0) throw new Error(`run_shell("true") exited ${value.exit_code}`);
      record('run_shell_paced.http', ms);
      record('run_shell_paced.http.server_duration', value.duration_ms);
    }
    for (let i = 0; i < Math.max(1, Math.round(perRound / 3)); i++) {
      await pause();
      await timedDocker('docker_exec.run_shell_paced', ['exec', http.containerId, 'true']);
    }
  }
}

// Row 5: file transfer over HTTP (base64), each round followed by the docker CLI equivalent:
// `docker exec -i <c> sh -c 'cat > f'` for uploads and `docker exec <c> cat f` for downloads.
// (`docker cp` is no baseline under gVisor: it writes the host-side rootfs, which the sandbox's
// own filesystem view need not show.)
async function fileTransfer(http) {
  const small = Buffer.alloc(1024, 7);
  const big = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24; // not all-zero bytes
  const huge = Buffer.alloc(10 * 1024 * 1024);
  for (let i = 0; i < huge.length; i++) huge[i] = (i * 2246822519) >>> 24;
  const smallB64 = small.toString('base64');
  const bigB64 = big.toString('base64');
  const hugeB64 = huge.toString('base64');
  const { client, sid, containerId } = http;
  const upload = async (name, file, b64, size) => {
    const { ms, value } = await timed(() => callOk(client, 'upload_file',
      { path: file, content: b64, encoding: 'base64', session_id: sid }));
    if (value.size !== size) throw new Error(`upload_file wrote ${value.size} bytes, expected ${size}`);
    record(name, ms);
  };
  await upload('upload_1k.http', '/tmp/bench-1k.bin', smallB64, small.length); // warm-up
  for (let round = 0; round < count(20); round++) {
    await upload('upload_1k.http', '/tmp/bench-1k.bin', smallB64, small.length);
    await upload('upload_1m.http', '/tmp/bench-1m.bin', bigB64, big.length);
    const { ms, value } = await timed(() =>
      callOk(client, 'download_file', { path: '/tmp/bench-1m.bin', encoding: 'base64', session_id: sid }));
    if (value.content !== bigB64) throw new Error('download_file returned different bytes');
    record('download_1m.http', ms);
    if (round % 2 === 0) { // 10 MiB rounds take longer: every other round
      await upload('upload_10m.http', '/tmp/bench-10m.bin', hugeB64, huge.length);
      const down = await timed(() => callOk(client, 'download_file',
        { path: '/tmp/bench-10m.bin', encoding: 'base64', session_id: sid }));
      if (down.value.content !== hugeB64) throw new Error('download_file returned different bytes (10 MiB)');
      record('download_10m.http', down.ms);
      await timedDocker('docker_upload_10m', ['exec', '-i', containerId, 'sh', '-c',
        'cat > /tmp/bench-base-10m.bin'], huge);
      const got10 = await timedDocker('docker_download_10m', ['exec', containerId, 'cat', '/tmp/bench-10m.bin']);
      if (!got10.equals(huge)) throw new Error('docker exec cat returned different bytes (10 MiB)');
    }

    await timedDocker('docker_upload_1k', ['exec', '-i', containerId, 'sh', '-c',
      'cat > /tmp/bench-base-1k.bin'], small);
    await timedDocker('docker_upload_1m', ['exec', '-i', containerId, 'sh', '-c',
      'cat > /tmp/bench-base-1m.bin'], big);
    const got = await timedDocker('docker_download_1m', ['exec', containerId, 'cat',
      '/tmp/bench-1m.bin']);
    if (!got.equals(big)) throw new Error('docker exec cat returned different bytes');
  }
  // The first sample of upload_1k was a warm-up.
  series.get('upload_1k.http').shift();
}

// Row 4: a new session's first run_code (container create + start + attach + run), then
// cleanup_session, interleaved with fresh `docker run` containers; the order rotates every
// round so no series always runs right after the expensive one.
async function coldStart(http, sessionsToClean, allSessions) {
  // A new session's first run_code. `warm`: from the warm pool, measured once the pool is full
  // again (the refill of the previous claim is not charged to this one). Cold: an environment
  // variable makes the session differ from the pooled profile, so its container is created.
  const newSession = async (warm) => {
    if (warm) {
      await waitFor(async () => (await pooledReady(http.serverPid, [http.containerId])).length >= POOL_SIZE,
        60000, 'the warm pool to refill');
    }
    const args = warm ? { code: '1+1' } : { code: '1+1', environment: { BENCH_COLD: '1' } };
    const { ms, value } = await timed(() => runCodeOk(http.client, args));
    record(warm ? 'pool_run_code.http' : 'cold_run_code.http', ms);
    if (!value.session_created) throw new Error('run_code without session_id made no new session');
    sessionsToClean.add(value.session_id);
    allSessions.add(value.session_id);
    const stats = await callOk(http.client, 'get_session_stats', { session_id: value.session_id });
    if (stats.warm_start !== warm) throw new Error(`expected warm_start ${warm}, got ${stats.warm_start}`);
    const cleanup = await timed(() =>
      callOk(http.client, 'cleanup_session', { session_id: value.session_id }));
    record('cleanup_session.http', cleanup.ms);
    sessionsToClean.delete(value.session_id);
    // Wait for the container to go so its teardown does not overlap the next measurement.
    await waitFor(async () => (await containersOfSession(value.session_id, [stats.container_id])).length === 0,
      15000, `removal of the container of ${value.session_id}`);
  };
  const steps = [
    () => newSession(true),
    () => newSession(false),
    () => timedDocker('docker_run.runsc.true', dockerRunArgs('runsc', ['true'])),
    () => timedDocker('docker_run.runsc.python', dockerRunArgs('runsc', ['python3', '-c', 'pass'])),
    () => timedDocker('docker_run.runc.true', dockerRunArgs('runc', ['true'])),
    () => timedDocker('docker_run.runc.python', dockerRunArgs('runc', ['python3', '-c', 'pass'])),
  ];
  for (let round = 0; round < count(10); round++) {
    for (let i = 0; i < steps.length; i++) await steps[(i + round) % steps.length]();
  }
}

// --- main ------------------------------------------------------------------------------------
async function stopStdioServer(stdio) {
  const pid = stdio.transport.pid;
  if (pid) {
    try { process.kill(pid, 'SIGTERM'); } catch { /* already gone */ }
    await waitFor(() => {
      try { process.kill(pid, 0); return false; } catch { return true; }
    }, 30000, `stdio server (pid ${pid}) to exit after SIGTERM`);
  }
  await stdio.client.close();
}

async function verifyNoLeaks(serverPids, sessionIds) {
  const leaks = [];
  for (const pid of serverPids) {
    for (const c of await managedContainersOf(pid)) leaks.push(`${c.Id.slice(0, 12)} (server pid ${pid})`);
  }
  for (const sid of sessionIds) {
    for (const c of await containersOfSession(sid)) leaks.push(`${c.Id.slice(0, 12)} (session ${sid})`);
  }
  const filters = encodeURIComponent(JSON.stringify({ label: [BASELINE_LABEL] }));
  const { body } = await dockerGet(`/containers/json?all=1&filters=${filters}`);
  for (const c of body) leaks.push(`${c.Id.slice(0, 12)} (docker run baseline)`);
  return [...new Set(leaks)];
}

async function main() {
  const started = Date.now();
  const info = machineInfo();
  mkdirSync(RESULTS_DIR, { recursive: true });
  const log = (msg) => process.stderr.write(`bench: ${msg}\n`);
  log(`server ${SERVER_BIN}; machine is shared, numbers are noisy`);

  const serverPids = [];
  const sessionsToClean = new Set(); // sessions still open (cleaned up on any failure)
  const allSessions = new Set();
  const notePids = () => {
    if (process.env.BENCH_PID_FILE) writeFileSync(process.env.BENCH_PID_FILE, `${serverPids.join('\n')}\n`);
  };
  let httpServer;
  let http;
  let stdio;
  let jupyter;
  let failure;
  try {
    httpServer = await startHttpServer();
    serverPids.push(httpServer.pid);
    notePids();
    stdio = await connectStdio();
    serverPids.push(stdio.transport.pid);
    notePids();
    http = await connectHttp(httpServer.url);
    const sides = [{ name: 'http', url: httpServer.url, ...http }, { name: 'stdio', ...stdio }];
    for (const side of sides) {
      const first = await runCodeOk(side.client, { code: '1+1' });
      side.sid = first.session_id;
      sessionsToClean.add(side.sid);
      allSessions.add(side.sid);
      const stats = await callOk(side.client, 'get_session_stats', { session_id: side.sid });
      side.containerId = stats.container_id;
      if (!side.containerId) throw new Error('get_session_stats returned no container_id');
      log(`${side.name} session ${side.sid} runs in container ${side.containerId.slice(0, 12)} (${stats.runtime})`);
    }
    const [httpSide, stdioSide] = sides;
    httpSide.serverPid = httpServer.pid;

    log('rows 1-2: warm run_code over HTTP and stdio, interleaved with docker exec and a Jupyter kernel');
    jupyter = startJupyterKernel();
    await jupyter.ready();
    await warmRunCode(httpSide, stdioSide, jupyter);
    await jupyter.close();
    log('row 6: run_code as an MCP task vs a plain call, HTTP and stdio, interleaved');
    await taskOverhead(httpSide, stdioSide);
    log('row 3: warm run_shell over HTTP, interleaved with docker exec');
    await warmRunShell(httpSide);
    await pacedRunShell(httpSide);
    log('row 5: upload_file / download_file (1 KiB to 10 MiB) over HTTP, interleaved with docker exec -i');
    await fileTransfer(httpSide);
    log('row 4: new sessions from the warm pool and cold, interleaved with docker run (runsc and runc)');
    await coldStart(httpSide, sessionsToClean, allSessions);

    for (const side of sides) {
      await callOk(side.client, 'cleanup_session', { session_id: side.sid });
      sessionsToClean.delete(side.sid);
    }
  } catch (error) {
    failure = error;
  } finally {
    // Best effort from here on: every step runs even when an earlier one fails.
    if (jupyter) await jupyter.close().catch(() => {});
    for (const sid of sessionsToClean) {
      for (const side of [http, stdio]) {
        if (side) await side.client.callTool({ name: 'cleanup_session', arguments: { session_id: sid } }).catch(() => {});
      }
    }
    if (http) await http.client.close().catch(() => {});
    if (stdio) await stopStdioServer(stdio).catch((e) => { failure ??= e; });
    if (httpServer) {
      const code = await stopServer(httpServer);
      if (code !== 0 && !failure) failure = new Error(`HTTP server exited with ${code} after SIGTERM`);
    }
    // Docker run baselines killed mid-run (e.g. by an error above) would otherwise linger.
    const filters = encodeURIComponent(JSON.stringify({ label: [BASELINE_LABEL] }));
    const { body: strays } = await dockerGet(`/containers/json?all=1&filters=${filters}`);
    for (const c of strays) await docker(['rm', '-f', c.Id]).catch(() => {});
  }

  const leaks = await verifyNoLeaks(serverPids.filter(Boolean), allSessions);
  if (leaks.length) {
    log(`LEAK: ${leaks.length} sandbox container(s) remain after the servers stopped: ${leaks.join(', ')}`);
    process.exitCode = 1;
  } else {
    log('no container of ours remains (checked labels sandbox-mcp.pid, sandbox-mcp.session, sandbox-mcp.bench)');
  }
  if (failure) {
    log(`FAILED: ${failure.stack ?? failure}`);
    process.exitCode = 1;
    return;
  }

  info.load_end = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  info.elapsed_s = ((Date.now() - started) / 1000).toFixed(1);
  const { md, json } = buildReport(info, series);
  const mdText = `${md}\nBenchmark took ${info.elapsed_s} s.\n`;
  writeFileSync(path.join(RESULTS_DIR, 'latest.md'), mdText);
  writeFileSync(path.join(RESULTS_DIR, 'latest.json'), `${JSON.stringify(json, null, 2)}\n`);
  process.stdout.write(mdText);
  log(`wrote ${path.join(RESULTS_DIR, 'latest.md')} and latest.json`);
}

await main();
