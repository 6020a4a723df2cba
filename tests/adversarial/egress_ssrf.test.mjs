// Attack: sandbox code reaching what it must not through its MCP sidecar. The model picks
// `mcp_allowlist`; with no operator list it used to be taken as given, so a session could name
// the sandbox-mcp server hosting it (http://127.0.0.1:<port>/mcp), `initialize` it from inside the
// sandbox and call run_shell there, or name loopback, private and cloud metadata addresses.
// Must hold: a call's own list names public hosts only (special addresses need the operator's
// mcp.allowlist), cloud metadata is never reachable, and the server's own listener is never
// reachable in any spelling, not even when the operator names it. Refused at session creation;
// no sandbox, no sidecar, and the server logs no MCP client but ours.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  SERVER_BIN, connectHttp, containersOfInstance, getEndpoint, startHttpServer, stopServer,
} from './attack_lib.mjs';
import { freePort, startHttp } from '../e2e/upstreams.mjs';

function writeConfig(document) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'egress-ssrf-'));
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify(document));
  return { file, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

async function runCode(client, args) {
  return client.callTool({ name: 'run_code', arguments: args });
}

// Every MCP client the server saw initialize: only the test's own may appear.
function initializedClients(server) {
  return [...server.logText().matchAll(/client (\S+) \S+ initialized/g)].map((m) => m[1]);
}

// Spellings of one loopback host:port that all reach the same listener.
function spellings(port, pathPart = '/mcp') {
  return [
    `http://127.0.0.1:${port}${pathPart}`, `http://127.1:${port}${pathPart}`,
    `http://2130706433:${port}${pathPart}`, `http://0x7f000001:${port}${pathPart}`,
    `http://0177.0.0.1:${port}${pathPart}`, `http://[::ffff:127.0.0.1]:${port}${pathPart}`,
    `http://[::1]:${port}${pathPart}`, `http://localhost:${port}${pathPart}`,
    `http://LocalHost.:${port}${pathPart}`, `http://x.localhost:${port}${pathPart}`,
    `http://0.0.0.0:${port}${pathPart}`,
  ];
}

// A refused call returns no session id: that nothing was made shows as no container of the
// server's instance (its warm pool is off and its sidecars are processes).
async function assertRefused(client, server, allowlist, pattern) {
  const res = await runCode(client, {
    mcp_allowlist: allowlist,
    // Reached only if the session were created: drive the server that hosts us.
    code: `
from sandbox_mcp import connect
c = connect(${JSON.stringify(allowlist[0])})
print(c.call_tool("run_shell", {"command": "id"}))`,
  });
  assert.equal(res.isError, true, `${allowlist[0]} was accepted: ${JSON.stringify(res.structuredContent)}`);
  assert.match(res.content[0].text, pattern, allowlist[0]);
  const { instance_id: instanceId } = JSON.parse((await getEndpoint(server.url, '/readyz')).text);
  assert.deepEqual(await containersOfInstance(instanceId), [], `${allowlist[0]}: containers exist`);
  assert.deepEqual([...new Set(initializedClients(server))], ['sandbox-mcp-e2e']);
}

describe('no operator allowlist: the model may name public hosts only', () => {
  let server;
  let client;
  let config;
  before(async () => {
    config = writeConfig({ pool: { size: 0 }, mcp: { sidecar: { mode: 'process' } } });
    server = await startHttpServer(['--config', config.file]);
    ({ client } = await connectHttp(server.url));
  });
  after(async () => {
    await client?.close();
    if (server) await stopServer(server);
    config?.remove();
  });

  test('the server itself, in every spelling, is refused at session creation', async () => {
    const port = new URL(server.url).port;
    for (const url of spellings(port)) {
      await assertRefused(client, server, [url],
        /may name public hosts only|own listener/);
    }
    const sessions = await client.callTool({ name: 'list_sessions', arguments: {} });
    assert.deepEqual(sessions.structuredContent.sessions, []);
  });

  test('loopback, private, link-local, CGNAT and local names need the operator', async () => {
    const targets = ['http://127.0.0.1:9/mcp', 'http://10.0.0.1/mcp', 'http://192.168.1.1/mcp',
      'http://172.16.0.1/mcp', 'http://169.254.10.10/mcp', 'http://100.64.0.1/mcp',
      'http://[fd00::1]/mcp', 'http://[fe80::1]/mcp', 'http://intranet/mcp', 'http://db.internal/'];
    for (const url of targets) {
      await assertRefused(client, server, [url],
        /may name public hosts only\. To allow it, the operator must add .* to mcp\.allowlist/);
    }
  });

  test('cloud metadata is refused in every spelling', async () => {
    const targets = ['http://169.254.169.254/latest/meta-data/', 'http://2852039166/latest/',
      'http://[::ffff:169.254.169.254]/latest/', 'http://[fd00:ec2::254]/latest/',
      'http://169.254.170.2/v2/credentials', 'http://100.100.100.200/latest/',
      'http://metadata.google.internal/computeMetadata/v1/', 'http://metadata/computeMetadata/v1/'];
    for (const url of targets) {
      await assertRefused(client, server, [url],
        /cloud metadata|may name public hosts only/);
    }
  });
});

describe('the operator names the server\'s own address', () => {
  let server;
  let client;
  let config;
  let upstream;
  let port;
  before(async () => {
    port = await freePort();
    // A harmless loopback upstream the operator allows, to attack from a working session.
    upstream = await startHttp((req, res) => {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"jsonrpc":"2.0","id":1,"result":{}}');
    });
    config = writeConfig({
      pool: { size: 0 },
      mcp: {
        sidecar: { mode: 'process' },
        allowlist: [`http://127.0.0.1:${port}/`, `http://localhost:${port}/`,
          `http://[::1]:${port}/`, `http://127.0.0.1:${upstream.port}/`],
      },
    });
    server = await startHttpServer(['--http', `127.0.0.1:${port}`, '--config', config.file]);
    ({ client } = await connectHttp(server.url));
  });
  after(async () => {
    await client?.close();
    if (server) await stopServer(server);
    await upstream?.stop();
    config?.remove();
  });

  test('even the operator cannot open the server\'s own listener', async () => {
    for (const url of [`http://127.0.0.1:${port}/mcp`, `http://localhost:${port}/mcp`,
      `http://[::1]:${port}/mcp`]) {
      await assertRefused(client, server, [url],
        new RegExp(`own listener 127\\.0\\.0\\.1:${port}`));
    }
  });

  test('from a working session, every spelling of the server is denied by the relay', async () => {
    const allowed = `http://127.0.0.1:${upstream.port}/mcp`;
    const targets = spellings(port);
    const res = await runCode(client, {
      mcp_allowlist: [allowed],
      code: `
import json, os, socket
results = []
for target in ${JSON.stringify(targets)}:
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ["MCP_PROXY_SOCKET"])
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ssrf-from-sandbox","version":"1"}}}'
    s.sendall(("POST %s HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\n"
               "Accept: application/json, text/event-stream\\r\\nConnection: close\\r\\n"
               "Content-Length: %d\\r\\n\\r\\n" % (target, len(body))).encode() + body)
    reply = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        reply += chunk
    s.close()
    results.append(reply.split(b"\\r\\n", 1)[0].decode())
print(json.dumps(results))`,
    });
    assert.equal(res.isError, false, res.content?.[0]?.text);
    const statuses = JSON.parse(res.structuredContent.stdout.trim().split('\n').pop());
    statuses.forEach((line, i) => assert.match(line, /^HTTP\/1\.1 403/, targets[i]));
    assert.deepEqual([...new Set(initializedClients(server))], ['sandbox-mcp-e2e'],
      'the sandbox initialized an MCP session on the server that hosts it');
    await client.callTool({ name: 'cleanup_session', arguments: { session_id: res.structuredContent.session_id } });
  });
});

test('an operator allowlist naming cloud metadata is refused at start-up', () => {
  const config = writeConfig({ mcp: { allowlist: ['http://169.254.169.254/latest/'] } });
  try {
    const res = spawnSync(SERVER_BIN, ['--http', '127.0.0.1:0', '--config', config.file],
      { encoding: 'utf8', timeout: 30000 });
    assert.notEqual(res.status, 0);
    assert.match(res.stderr, /mcp\.allowlist/);
    assert.match(res.stderr, /cloud metadata/);
  } finally {
    config.remove();
  }
});
