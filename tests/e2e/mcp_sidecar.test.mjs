// The MCP sidecar end to end: the official TypeScript client drives sandbox-mcp, code in a
// runsc sandbox calls the real server-everything (Streamable HTTP on 127.0.0.1) through the
// session's sidecar with the in-sandbox helper (sandbox_mcp), and everything the allowlist does
// not allow fails with the right error. Also: the sidecar's fault handling, its recovery after
// being killed, operator narrowing, and process mode.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectStdio, containersOfSession, waitFor } from './harness.mjs';
import { call } from './flow.mjs';
import {
  freePort, startEndlessStream, startEverything, startHanging, startRedirector,
} from './upstreams.mjs';

const UPSTREAM_IDLE_TIMEOUT_MS = 2000;

function writeConfig(mcp) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-e2e-'));
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify({ mcp }));
  return { file, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

// Runs Python in a session and returns the JSON object its last stdout line prints.
async function runJson(client, args) {
  const res = await call(client, 'run_code', args);
  if (res.isError) assert.fail(`run_code failed: ${res.content[0].text}`);
  const sc = res.structuredContent;
  assert.equal(sc.status, 'success', `sandbox code failed:\n${sc.stderr}\n${sc.stdout}`);
  const lines = sc.stdout.trim().split('\n');
  return { value: JSON.parse(lines[lines.length - 1]), structured: sc };
}

// Python that tries `body` and prints {"ok": ..., "error": type, "message", "status", "code"}.
function attempt(body) {
  return `
import json
from sandbox_mcp import connect, McpError, PolicyDenied
out = {"ok": None}
try:
${body.trim().split('\n').map((l) => `    ${l}`).join('\n')}
except PolicyDenied as e:
    out.update(error="PolicyDenied", message=str(e), status=getattr(e, "status", None),
               code=getattr(e, "code", None))
except McpError as e:
    out.update(error="McpError", message=str(e), status=getattr(e, "status", None),
               code=getattr(e, "code", None))
except OSError as e:
    out.update(error=type(e).__name__, message=str(e))
print(json.dumps(out))
`;
}

async function sidecarContainers(sessionId) {
  return (await containersOfSession(sessionId)).filter(
    (c) => c.Labels['sandbox-mcp.role'] === 'sidecar');
}

function auditLines(sessionId) {
  const lines = [];
  for (const root of ['/run/sandbox-mcp']) {
    if (!fs.existsSync(root)) continue;
    for (const instance of fs.readdirSync(root)) {
      const dir = path.join(root, instance);
      if (!fs.statSync(dir).isDirectory()) continue;
      for (const session of fs.readdirSync(dir)) {
        const file = path.join(dir, session, 'audit.jsonl');
        if (!fs.existsSync(file)) continue;
        for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
          if (!line) continue;
          const record = JSON.parse(line);
          if (record.session === sessionId) lines.push(record);
        }
      }
    }
  }
  return lines;
}

describe('sidecar in container mode (default)', () => {
  let everything;
  let redirector;
  let hanging;
  let stream;
  let downPort;
  let conn;
  let config;
  let allowedSession; // the session the tests below share: its sandbox talks to server-everything
  before(async () => {
    everything = await startEverything();
    redirector = await startRedirector(`http://127.0.0.1:${everything.port}/admin`);
    hanging = await startHanging();
    stream = await startEndlessStream();
    downPort = await freePort();
    // Loopback upstreams are the operator's to grant: a call's own list may name public hosts only.
    const origins = [`http://127.0.0.1:${everything.port}/`, `http://127.0.0.1:${redirector.port}/`,
      `${new URL(hanging.url()).origin}/`, `${new URL(stream.url()).origin}/`,
      `http://127.0.0.1:${downPort}/`];
    config = writeConfig({
      allowlist: [...new Set(origins)],
      sidecar: { upstream_idle_timeout_ms: UPSTREAM_IDLE_TIMEOUT_MS },
    });
    conn = await connectStdio(['--config', config.file]);
  });
  after(async () => {
    await conn?.client.close();
    await everything?.stop();
    await redirector?.stop();
    await hanging?.stop();
    await stream?.stop();
    config?.remove();
  });

  test('initialize, tools/list and tools/call reach server-everything through the socket', async () => {
    const { value, structured } = await runJson(conn.client, {
      mcp_allowlist: [everything.url],
      code: `
import json, os
from sandbox_mcp import connect
c = connect(${JSON.stringify(everything.url)})
names = [t["name"] for t in c.list_tools()]
echo = c.call_tool("echo", {"message": "hello from gVisor"})
print(json.dumps({"socket": os.environ.get("MCP_PROXY_SOCKET"), "server": c.server_info,
                  "tools": names, "echo": echo}))
`,
    });
    assert.equal(structured.session_created, true);
    allowedSession = structured.session_id;
    assert.equal(value.socket, '/run/mcp/mcp.sock');
    assert.match(JSON.stringify(value.server), /everything/i);
    assert.ok(value.tools.includes('echo') && value.tools.includes('get-sum'), value.tools.join());
    assert.match(JSON.stringify(value.echo.content), /hello from gVisor/);
    // The session's relay is its own container, separate from the sandbox.
    assert.equal((await sidecarContainers(allowedSession)).length, 1);
  });

  test('a URL not on the allowlist is refused by the policy', async () => {
    const { value } = await runJson(conn.client, {
      session_id: allowedSession,
      code: attempt(`connect("http://127.0.0.1:${redirector.port}/mcp")`),
    });
    assert.equal(value.error, 'PolicyDenied', JSON.stringify(value));
    assert.equal(value.status, 403);
    assert.match(value.message, /allowlist|not allowed|no rule/i);
  });

  test('a redirect is not followed, and following it by hand is refused', async () => {
    const res = await call(conn.client, 'run_code', {
      mcp_allowlist: [redirector.url('/mcp')],
      code: attempt(`connect(${JSON.stringify(redirector.url('/mcp'))})`)
        + attempt(`connect("http://127.0.0.1:${everything.port}/admin")`),
    });
    const [redirect, follow] = res.structuredContent.stdout.trim().split('\n').map(JSON.parse);
    assert.equal(redirect.error, 'McpError', JSON.stringify(redirect));
    assert.match(redirect.message, /redirect/i);
    assert.match(redirect.message, /\/admin/);
    assert.equal(follow.error, 'PolicyDenied', JSON.stringify(follow));
    await call(conn.client, 'cleanup_session', { session_id: res.structuredContent.session_id });
  });

  test('methods and tools outside the entry are refused with JSON-RPC errors', async () => {
    const restricted = { url: everything.url, methods: ['tools/call'], tools: ['echo'] };
    const res = await call(conn.client, 'run_code', {
      mcp_allowlist: [restricted],
      code: `
from sandbox_mcp import connect
c = connect(${JSON.stringify(everything.url)})
print(__import__("json").dumps({"ok": c.call_tool("echo", {"message": "allowed"})}))
` + attempt('c.list_tools()') + attempt('c.call_tool("get-sum", {"a": 1, "b": 2})'),
    });
    const [echo, list, sum] = res.structuredContent.stdout.trim().split('\n').map(JSON.parse);
    assert.match(JSON.stringify(echo.ok), /allowed/);
    assert.equal(list.code, -32601, JSON.stringify(list));
    assert.match(list.message, /tools\/list/);
    assert.equal(sum.code, -32602, JSON.stringify(sum));
    assert.match(sum.message, /get-sum/);

    const sid = res.structuredContent.session_id;
    const stats = await call(conn.client, 'get_session_stats', { session_id: sid });
    const mcp = stats.structuredContent.mcp;
    assert.deepEqual(mcp.allowlist[0].tools, ['echo']);
    assert.equal(mcp.sidecar.running, true);
    assert.ok(mcp.sidecar.denied >= 2, JSON.stringify(mcp));
    assert.ok(mcp.sidecar.allowed >= 2, JSON.stringify(mcp));
    await call(conn.client, 'cleanup_session', { session_id: sid });
  });

  test('the sandbox still has no network: a direct TCP connection fails', async () => {
    const { value } = await runJson(conn.client, {
      session_id: allowedSession,
      code: attempt(`
import socket
socket.create_connection(("127.0.0.1", ${everything.port}), timeout=3)
out["ok"] = "connected"`),
    });
    assert.equal(value.ok, null, 'a sandbox connected straight to the upstream');
    assert.ok(value.error, JSON.stringify(value));
  });

  test('the audit log records each decision with time, URL, decision, status and bytes', async () => {
    const records = auditLines(allowedSession);
    const allowed = records.filter((r) => r.decision === 'allow');
    const denied = records.filter((r) => r.decision === 'deny');
    assert.ok(allowed.length >= 3, JSON.stringify(records));
    assert.ok(denied.some((r) => r.url.includes(`:${redirector.port}/`)), JSON.stringify(denied));
    for (const record of records) {
      for (const field of ['time', 'session', 'method', 'url', 'decision', 'reason', 'status', 'bytes', 'ms']) {
        assert.ok(field in record, `audit line lacks ${field}: ${JSON.stringify(record)}`);
      }
    }
    assert.ok(allowed.every((r) => r.status === 200 || r.status === 202), JSON.stringify(allowed));
  });

  test('the allowlist is fixed at creation', async () => {
    const res = await conn.client.callTool({
      name: 'run_code',
      arguments: { session_id: allowedSession, mcp_allowlist: [redirector.url('/mcp')], code: '1' },
    });
    assert.equal(res.isError, true);
    assert.match(res.content[0].text, /different mcp_allowlist/);
  });

  test('upstream down answers 502 with the reason', async () => {
    const url = `http://127.0.0.1:${downPort}/mcp`;
    const { value, structured } = await runJson(conn.client, {
      mcp_allowlist: [url],
      code: attempt(`connect(${JSON.stringify(url)})`),
    });
    assert.equal(value.status, 502, JSON.stringify(value));
    assert.match(value.message, /refused|connect/i);
    await call(conn.client, 'cleanup_session', { session_id: structured.session_id });
  });

  test('an upstream that hangs is cut off after the idle timeout (504)', async () => {
    {
      const started = Date.now();
      const { value, structured } = await runJson(conn.client, {
        mcp_allowlist: [hanging.url()],
        code: attempt(`connect(${JSON.stringify(hanging.url())}, timeout=30)`),
      });
      assert.equal(value.status, 504, JSON.stringify(value));
      assert.ok(Date.now() - started < 20000);
      await call(conn.client, 'cleanup_session', { session_id: structured.session_id });
    }
  });

  test('a client that leaves mid-stream cancels the upstream request', async () => {
    {
      const { value, structured } = await runJson(conn.client, {
        mcp_allowlist: [stream.url()],
        code: `
import json, os, socket
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["MCP_PROXY_SOCKET"])
body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
s.sendall(b"POST ${stream.url()} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Type: application/json\\r\\n"
          b"Accept: text/event-stream\\r\\nContent-Length: " + str(len(body)).encode() + b"\\r\\n\\r\\n" + body)
first = s.recv(4096)
s.close()
print(json.dumps({"first": first.decode(errors="replace")}))
`,
      });
      assert.match(value.first, /200/);
      assert.match(value.first, /notifications\/message/);
      const closedAt = await Promise.race([
        stream.closed,
        new Promise((resolve) => setTimeout(() => resolve(null), 10000)),
      ]);
      assert.ok(closedAt, 'the upstream request stayed open after the sandbox client left');
      assert.equal(stream.opened(), 1);
      await call(conn.client, 'cleanup_session', { session_id: structured.session_id });
    }
  });

  test('a killed sidecar is reported and restarted on the next call', async () => {
    const [relay] = await sidecarContainers(allowedSession);
    execFileSync('docker', ['kill', relay.Id]);
    await waitFor(async () => (await sidecarContainers(allowedSession)).every((c) => c.Id !== relay.Id),
      15000, 'the killed sidecar to go');
    const { value, structured } = await runJson(conn.client, {
      session_id: allowedSession,
      code: `
import json
from sandbox_mcp import connect
print(json.dumps(connect(${JSON.stringify(everything.url)}).call_tool("echo", {"message": "again"})))
`,
    });
    assert.match(JSON.stringify(value), /again/);
    assert.ok(structured.warnings?.some((w) => /restarted/.test(w)), JSON.stringify(structured));
    const stats = await call(conn.client, 'get_session_stats', { session_id: allowedSession });
    assert.equal(stats.structuredContent.mcp.sidecar.restarts, 1);
  });

  test('cleanup_session removes the sandbox, its sidecar and its directory', async () => {
    const before = auditLines(allowedSession).length;
    assert.ok(before > 0);
    await call(conn.client, 'cleanup_session', { session_id: allowedSession });
    await waitFor(async () => (await containersOfSession(allowedSession)).length === 0, 15000,
      'sandbox and sidecar removal');
    assert.equal(auditLines(allowedSession).length, 0, 'the session directory was left behind');
  });

  test('a session without mcp_allowlist has no socket and the helper says why', async () => {
    const res = await call(conn.client, 'run_code', {
      code: `${attempt('connect("http://127.0.0.1:1/mcp")')}
import os
print(json.dumps({"exists": os.path.exists("/run/mcp"), "env": os.environ.get("MCP_PROXY_SOCKET")}))`,
    });
    const [refused, view] = res.structuredContent.stdout.trim().split('\n').map(JSON.parse);
    assert.equal(refused.error, 'McpError');
    assert.match(refused.message, /no MCP allowlist/);
    assert.match(refused.message, /mcp_allowlist/);
    assert.deepEqual(view, { exists: false, env: null });
    await call(conn.client, 'cleanup_session', { session_id: res.structuredContent.session_id });
  });
});

describe('operator allowlist', () => {
  let everything;
  let conn;
  let config;
  before(async () => {
    everything = await startEverything();
    config = writeConfig({
      allowlist: [{ url: `http://127.0.0.1:${everything.port}/`, methods: ['tools/call', 'tools/list'] }],
      sidecar: { mode: 'process' },
    });
    conn = await connectStdio(['--config', config.file]);
  });
  after(async () => {
    await conn?.client.close();
    await everything?.stop();
    config?.remove();
  });

  test('a call may narrow the operator list but never widen it', async () => {
    const widen = await conn.client.callTool({
      name: 'run_code',
      arguments: { mcp_allowlist: ['http://127.0.0.1:1/mcp'], code: '1' },
    });
    assert.equal(widen.isError, true);
    assert.match(widen.content[0].text, /not covered by the operator's allowlist/);

    const method = await conn.client.callTool({
      name: 'run_code',
      arguments: { mcp_allowlist: [{ url: everything.url, methods: ['resources/list'] }], code: '1' },
    });
    assert.equal(method.isError, true);
    assert.match(method.content[0].text, /resources\/list/);
  });

  test('process mode: the narrowed list works, and a killed relay is restarted', async () => {
    const code = `
import json
from sandbox_mcp import connect
c = connect(${JSON.stringify(everything.url)})
print(json.dumps({"sum": c.call_tool("get-sum", {"a": 2, "b": 3})}))
`;
    const { value, structured } = await runJson(conn.client, { mcp_allowlist: [everything.url], code });
    const sid = structured.session_id;
    assert.match(JSON.stringify(value.sum), /5/);
    const stats = await call(conn.client, 'get_session_stats', { session_id: sid });
    const relay = stats.structuredContent.mcp.sidecar;
    assert.equal(relay.mode, 'process');
    assert.deepEqual(stats.structuredContent.mcp.allowlist[0].methods, ['tools/call', 'tools/list']);
    const pid = Number(relay.relay.replace('process ', ''));
    process.kill(pid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 300));  // a zombie until the server reaps it
    const again = await runJson(conn.client, { session_id: sid, code });
    assert.match(JSON.stringify(again.value.sum), /5/);
    const warning = again.structured.warnings?.find((w) => /restarted/.test(w));
    assert.ok(warning, JSON.stringify(again.structured));
    const restarted = Number(warning.match(/restarted as process (\d+)/)[1]);
    assert.notEqual(restarted, pid);
    await call(conn.client, 'cleanup_session', { session_id: sid });
    assert.throws(() => process.kill(restarted, 0), 'the relay outlived its session');
  });
});
