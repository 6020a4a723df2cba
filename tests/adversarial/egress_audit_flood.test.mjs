// Attack: sandbox code floods its MCP sidecar with requests (denied ones are cheapest) so that
// the relay's audit log fills the host's disk. Must hold: the audit log stops at
// mcp.sidecar.audit_log_max_bytes, the lines past it are dropped and counted, and
// get_session_stats reports the count (mcp.sidecar.audit_dropped).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectHttp, startHttpServer, stopServer } from './attack_lib.mjs';

const CAP = 8192;
const FLOOD = 1500;
let server;
let client;
let configDir;
let runtimeDir;

before(async () => {
  configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'audit-flood-'));
  runtimeDir = path.join(configDir, 'run');
  const file = path.join(configDir, 'config.json');
  fs.writeFileSync(file, JSON.stringify({
    pool: { size: 0 },
    mcp: { runtime_dir: runtimeDir, sidecar: { mode: 'process', audit_log_max_bytes: CAP } },
  }));
  server = await startHttpServer(['--config', file]);
  ({ client } = await connectHttp(server.url));
});

after(async () => {
  await client?.close();
  if (server) await stopServer(server);
  fs.rmSync(configDir, { recursive: true, force: true });
});

function auditFiles() {
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name === 'audit.jsonl') found.push(full);
    }
  };
  walk(runtimeDir);
  return found;
}

test('a request flood leaves the audit log within its cap and the drops are counted', async () => {
  const res = await client.callTool({
    name: 'run_code',
    arguments: {
      mcp_allowlist: ['https://mcp.example.com/mcp'],
      code: `
import os, socket
denied = 0
for i in range(${FLOOD}):
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ["MCP_PROXY_SOCKET"])
    s.sendall(b"GET http://flood.example.com/%d HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n" % i)
    reply = s.recv(64)
    denied += reply.startswith(b"HTTP/1.1 403")
    s.close()
print(denied)`,
      timeout: 120,
    },
  });
  assert.equal(res.isError, false, res.content?.[0]?.text);
  assert.equal(res.structuredContent.stdout.trim(), String(FLOOD), res.structuredContent.stderr);
  const [audit] = auditFiles();
  assert.ok(audit, 'no audit log found');
  const size = fs.statSync(audit).size;
  assert.ok(size <= CAP, `the audit log grew to ${size} bytes past its cap of ${CAP}`);
  const lines = fs.readFileSync(audit, 'utf8').trim().split('\n');
  for (const line of lines) JSON.parse(line);  // only whole lines
  const sid = res.structuredContent.session_id;
  const stats = await client.callTool({ name: 'get_session_stats', arguments: { session_id: sid } });
  const dropped = stats.structuredContent.mcp.sidecar.audit_dropped;
  assert.equal(dropped + lines.length, FLOOD, JSON.stringify(stats.structuredContent.mcp));
  await client.callTool({ name: 'cleanup_session', arguments: { session_id: sid } });
});
