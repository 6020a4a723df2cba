// Shared helpers for the end-to-end tests: start sandbox-mcp, connect the official MCP client,
// and look at the Docker engine directly (to prove containers really go away).
import { spawn } from 'node:child_process';
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as StreamableHTTPClientTransportV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioClientTransportV2 } from '@modelcontextprotocol/client/stdio';
// Result schemas for task requests; bench/ imports them from here (it has no node_modules).
export { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

export const SERVER_BIN = process.env.SANDBOX_MCP_BIN;
if (!SERVER_BIN) throw new Error('set SANDBOX_MCP_BIN to the sandbox-mcp binary (ctest does this)');

export function newClient() {
  return new Client({ name: 'sandbox-mcp-e2e', version: '1.0.0' });
}

export async function connectStdio(extraArgs = []) {
  const transport = new StdioClientTransport({
    command: SERVER_BIN,
    args: ['--stdio', ...extraArgs],
    stderr: 'pipe',
  });
  const stderr = [];
  transport.stderr?.on('data', (chunk) => stderr.push(chunk.toString()));
  const client = newClient();
  await client.connect(transport);
  return { client, transport, stderr };
}

// The same with the v2 client (@modelcontextprotocol/client, MCP 2026-07-28); `mode` is its
// versionNegotiation mode: { pin: '2026-07-28' }, 'auto' or 'legacy'. Pinned or auto, it first runs
// a short-lived copy of the server command for its server/discover probe (stderr discarded), stops
// it and only then starts the server it keeps (`transport.pid`).
export async function connectStdioV2(mode, extraArgs = []) {
  const transport = new StdioClientTransportV2({
    command: SERVER_BIN,
    args: ['--stdio', ...extraArgs],
    stderr: 'pipe',
  });
  const stderr = [];
  transport.stderr?.on('data', (chunk) => stderr.push(chunk.toString()));
  const client = new ClientV2({ name: 'sandbox-mcp-e2e-v2', version: '1.0.0' },
    { versionNegotiation: { mode } });
  await client.connect(transport);
  return { client, transport, stderr };
}

// A v2 client (MCP 2026-07-28, pinned) over Streamable HTTP to `url`, sending `headers` (e.g. a
// bearer token) with every request. It lists the tools first: from then on it mirrors the
// arguments tools mark (x-mcp-header) as Mcp-Param-* headers.
export async function connectHttpV2(url, headers = {}) {
  const client = new ClientV2({ name: 'sandbox-mcp-e2e-v2', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransportV2(new URL(url), { requestInit: { headers } }));
  await client.listTools();
  return client;
}

// Starts `sandbox-mcp --http 127.0.0.1:0` and resolves once it logs its bound port.
export function startHttpServer(extraArgs = [], env = {}, address = '127.0.0.1:0') {
  return new Promise((resolve, reject) => {
    const child = spawn(SERVER_BIN, ['--http', address, ...extraArgs], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...env },
    });
    let log = '';
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log}`)), 30000);
    child.stderr.on('data', (chunk) => {
      log += chunk.toString();
      const match = log.match(/Streamable HTTP at (http:\/\/[^\s]+)/);
      if (match && !child.url) {
        clearTimeout(timer);
        child.url = match[1];
        resolve(child);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (!child.url) reject(new Error(`server exited with ${code}:\n${log}`));
    });
    child.logText = () => log;
  });
}

export async function stopServer(child) {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

export async function connectHttp(url, headers = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = newClient();
  await client.connect(transport);
  return { client, transport };
}

// A request to the Docker Engine API over a Unix socket (the local engine's by default):
// { status, body } with the body parsed as JSON when there is one.
export function dockerRequest(method, path, body = undefined, socketPath = '/var/run/docker.sock') {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        socketPath, path: `/v1.41${path}`, method,
        headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => {
          let parsed = null;
          try { parsed = text ? JSON.parse(text) : null; } catch { parsed = text; }
          resolve({ status: res.statusCode, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

// GET on the Docker Engine API over its Unix socket.
export function dockerGet(path) {
  return dockerRequest('GET', path);
}

// Runs `cmd` (argv) in a running container as root, like `docker exec -u 0`, and resolves to its
// exit code once it ended. `socketPath`: the engine's Unix socket (another engine than the local
// one, e.g. the TLS engine's private socket). Tests use it to signal sandboxed code that waits
// for a file, instead of racing a sleep.
export async function dockerExec(containerId, cmd, socketPath = '/var/run/docker.sock') {
  const created = await dockerRequest('POST', `/containers/${containerId}/exec`,
    { Cmd: cmd, User: '0', AttachStdout: false, AttachStderr: false }, socketPath);
  if (created.status !== 201) throw new Error(`exec create in ${containerId}: ${created.status} ${JSON.stringify(created.body)}`);
  const execId = created.body.Id;
  const started = await dockerRequest('POST', `/exec/${execId}/start`, { Detach: true, Tty: false }, socketPath);
  if (started.status !== 200) throw new Error(`exec start in ${containerId}: ${started.status} ${JSON.stringify(started.body)}`);
  const deadline = Date.now() + 30000;
  for (;;) {
    const { body } = await dockerRequest('GET', `/exec/${execId}/json`, undefined, socketPath);
    if (!body.Running && body.ExitCode !== null) return body.ExitCode;
    if (Date.now() > deadline) throw new Error(`exec ${JSON.stringify(cmd)} in ${containerId} still running after 30 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Python that blocks until `file` exists in the sandbox (at most `capS` seconds), then prints
// `go` or, if the cap passed first, `no go`. Pair it with dockerExec([... 'touch', file]).
export function waitForFilePython(file = '/tmp/go', capS = 60) {
  return `import os, time\n_deadline = time.time() + ${capS}\n`
    + `while not os.path.exists(${JSON.stringify(file)}) and time.time() < _deadline:\n    time.sleep(0.05)\n`
    + `print("go" if os.path.exists(${JSON.stringify(file)}) else "no go", flush=True)\n`;
}

async function listContainers(filter) {
  const filters = encodeURIComponent(JSON.stringify(filter));
  const { body } = await dockerGet(`/containers/json?all=1&filters=${filters}`);
  return body;
}

// The containers of a session: those labelled with its id (cold sandboxes, MCP sidecars) plus
// `ids` (a sandbox from the warm pool was made before its session existed, so it carries no
// session label: pass the container_id get_session_stats reports).
export async function containersOfSession(sessionId, ids = []) {
  const found = await listContainers({ label: [`sandbox-mcp.session=${sessionId}`] });
  if (ids.length > 0) {
    for (const c of await listContainers({ id: ids })) {
      if (!found.some((f) => f.Id === c.Id)) found.push(c);
    }
  }
  return found;
}

// Every container (running or not) of the server instance `instanceId` (its label).
export function containersOfInstance(instanceId) {
  return listContainers({ label: [`sandbox-mcp.instance=${instanceId}`] });
}

// GET on one of the server's plain endpoints (/healthz, /readyz, /metrics): { status, headers,
// text }. `url` is the server's MCP URL; the path replaces its own.
export async function getEndpoint(url, path, headers = {}) {
  const target = new URL(path, url);
  const res = await fetch(target, { headers });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

// The id of the session's sandbox container, from get_session_stats.
export async function sandboxContainerId(client, sessionId) {
  const res = await client.callTool({ name: 'get_session_stats', arguments: { session_id: sessionId } });
  return res.structuredContent.container_id;
}

// Whether the process `pid` has exited.
export function processExited(pid) {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

export async function waitFor(predicate, timeoutMs = 10000, what = 'condition') {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export const EXPECTED_TOOLS = [
  'run_code', 'run_shell', 'upload_file', 'download_file', 'list_files',
  'get_session_stats', 'cleanup_session', 'list_sessions',
  'snapshot_session', 'fork_session', 'restore_session',
];
