// The egress gateway end to end: the official TypeScript client drives sandbox-mcp, and in a
// runsc sandbox (network none) pip and npm install packages from an HTTPS package index on
// 127.0.0.1 through the session's sidecar proxy, as they are (HTTP_PROXY/HTTPS_PROXY). Packages
// import in the running interpreter and in new processes. Refused requests get a 403 whose reason
// the client prints and the tool result lists; a session that did not ask has no proxy; a server
// whose operator did not enable egress refuses the argument; nothing is left behind. Secrets:
// the proxy sets the operator's header for a named HTTPS host, and the MCP relay for an
// allowlisted MCP server (server-everything behind a door that wants the token).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectStdio, containersOfSession } from './harness.mjs';
import { call } from './flow.mjs';
import https from 'node:https';
import crypto from 'node:crypto';
import http from 'node:http';
import { makeCertificates, startPackageIndex } from './package_index.mjs';
import { startEverything, startHttp } from './upstreams.mjs';

const PYTHON_PACKAGES = [
  { name: 'egress-alpha', version: '1.0', source: 'VALUE = "alpha"\n', requires: ['egress-beta>=1'] },
  { name: 'egress-beta', version: '1.2', source: 'VALUE = "beta"\n' },
  { name: 'egress-gamma', version: '0.3', source: 'VALUE = "gamma"\n', requires: ['egress-delta'] },
  { name: 'egress-delta', version: '2.0', source: 'VALUE = "delta"\n' },
  { name: 'egress-epsilon', version: '1.0', source: 'VALUE = "epsilon"\n' },
];
const NPM_PACKAGES = [
  { name: 'egress-one', version: '1.0.0', files: { 'index.js': "module.exports = 'one:' + require('egress-two');\n" },
    dependencies: { 'egress-two': '^1.0.0' } },
  { name: 'egress-two', version: '1.1.0', files: { 'index.js': "module.exports = 'two';\n" } },
];

function writeConfig(document) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-egress-'));
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify(document));
  return { file, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

async function shell(client, args) {
  const res = await call(client, 'run_shell', args);
  assert.ok(!res.isError, `run_shell failed: ${res.content[0].text}`);
  return res.structuredContent;
}

describe('egress gateway', () => {
  let index;
  let config;
  let server;
  before(async () => {
    index = await startPackageIndex({ python: PYTHON_PACKAGES, npm: NPM_PACKAGES });
    config = writeConfig({ egress: { enabled: true, allow: [`127.0.0.1:${index.port}`] } });
    server = await connectStdio(['--config', config.file]);
  });
  after(async () => {
    await server?.client.close();
    await index?.close();
    config?.remove();
  });

  test('pip and npm install from the allowed index through the proxy', async () => {
    const { client } = server;
    // The index listens on the host's 127.0.0.1, which inside the sandbox is the sandbox's own
    // loopback (NO_PROXY by default): this session sends it through the proxy.
    const environment = { ...index.clientEnv('/workspace/ca.pem'), NO_PROXY: '', no_proxy: '' };
    const first = await call(client, 'run_code', {
      code: `open('/workspace/ca.pem', 'w').write(${JSON.stringify(index.caPem)})\n` +
        "import os; print(os.environ['HTTPS_PROXY'], os.environ['NO_PROXY'])",
      egress: true,
      environment,
    });
    assert.ok(!first.isError, first.content[0].text);
    const sessionId = first.structuredContent.session_id;
    assert.equal(first.structuredContent.stdout.trim(), 'http://127.0.0.1:3128');

    const pip = await shell(client, {
      session_id: sessionId,
      command: 'pip install egress-alpha egress-gamma egress-epsilon 2>&1 | tail -3 && ' +
        'python3 -c "import egress_alpha, egress_beta, egress_delta; print(egress_alpha.VALUE, egress_beta.VALUE, egress_delta.VALUE)"',
      timeout: 120,
    });
    assert.equal(pip.exit_code, 0, `${pip.stdout}\n${pip.stderr}`);
    assert.match(pip.stdout, /alpha beta delta/);
    assert.deepEqual(pip.warnings ?? [], []);

    // The interpreter that was running before the install imports them too.
    const inProcess = await call(client, 'run_code', {
      session_id: sessionId,
      code: 'import egress_gamma, egress_epsilon\nprint(egress_gamma.VALUE, egress_epsilon.VALUE)',
    });
    assert.equal(inProcess.structuredContent.stdout.trim(), 'gamma epsilon',
      inProcess.structuredContent.stderr);

    const npm = await shell(client, {
      session_id: sessionId,
      command: 'cd /workspace && npm install egress-one 2>&1 | tail -2 && node -e "console.log(require(\'egress-one\'))"',
      timeout: 120,
    });
    assert.equal(npm.exit_code, 0, `${npm.stdout}\n${npm.stderr}`);
    assert.match(npm.stdout, /one:two/);

    const stats = await call(client, 'get_session_stats', { session_id: sessionId });
    const egress = stats.structuredContent.mcp?.egress ?? stats.structuredContent.egress;
    assert.ok(egress, JSON.stringify(stats.structuredContent));
    assert.ok(egress.allowed >= 2, JSON.stringify(egress));
    assert.equal(egress.denied, 0);
    assert.ok(egress.bytes_down > 1000, JSON.stringify(egress));
    assert.ok(index.requests.some((p) => p.startsWith('/simple/egress-alpha')), index.requests.join(' '));
    assert.ok(index.requests.some((p) => p.endsWith('.tgz')), index.requests.join(' '));
  });

  test('a refused request gets a 403 whose reason the client and the tool result show', async () => {
    const { client } = server;
    const res = await call(client, 'run_code', {
      egress: true,
      environment: { NO_PROXY: '', no_proxy: '' },
      code: `
import urllib.request, urllib.error
for url in ["https://localhost:${index.port}/", "https://127.0.0.1:${index.port + 1}/", "http://[::1]:${index.port}/"]:
    try:
        urllib.request.urlopen(url, timeout=20)
        print("REACHED", url)
    except (urllib.error.URLError, OSError) as e:
        print("refused:", e)
`,
    });
    assert.ok(!res.isError, res.content[0].text);
    const out = res.structuredContent.stdout;
    assert.doesNotMatch(out, /REACHED/);
    assert.match(out, /Tunnel connection failed: 403 Forbidden: .*localhost/);
    const warnings = res.structuredContent.warnings ?? [];
    assert.ok(warnings.some((w) => w.startsWith(`egress refused CONNECT localhost:${index.port}: `)),
      JSON.stringify(warnings));
    assert.ok(warnings.some((w) => w.startsWith(`egress refused GET http://[::1]:${index.port}/`)),
      JSON.stringify(warnings));
    assert.equal(warnings.length, 3, JSON.stringify(warnings));
  });

  test('a session that did not ask has no proxy; egress is the operator\'s to enable', async () => {
    const { client } = server;
    const plain = await call(client, 'run_code', {
      code: "import os; print(sorted(k for k in os.environ if 'proxy' in k.lower()))",
    });
    assert.equal(plain.structuredContent.stdout.trim(), '[]');
    const defaults = await call(client, 'run_code', {
      code: "import os; print(os.environ['HTTP_PROXY'], os.environ['no_proxy'])", egress: true,
    });
    assert.equal(defaults.structuredContent.stdout.trim(),
      'http://127.0.0.1:3128 localhost,127.0.0.1,::1');
    const widened = await call(client, 'run_code', {
      code: '1', egress: { allow: ['pypi.org'] },
    });
    assert.ok(widened.isError);
    assert.match(widened.content[0].text, /not in this server's egress list/);
    assert.match(widened.content[0].text, /127\.0\.0\.1/);

    const off = await connectStdio();
    try {
      const refused = await call(off.client, 'run_code', { code: '1', egress: true });
      assert.ok(refused.isError);
      assert.match(refused.content[0].text, /egress\.enabled/);
    } finally {
      await off.client.close();
    }
  });

  test('closing the client leaves no container of its sessions', async () => {
    const res = await call(server.client, 'run_code', { code: '1', egress: true });
    const sessionId = res.structuredContent.session_id;
    assert.ok((await containersOfSession(sessionId)).length >= 1);
    await server.client.close();
    server = null;
    for (let i = 0; i < 100 && (await containersOfSession(sessionId)).length > 0; i += 1) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(await containersOfSession(sessionId), []);
  });
});

// An HTTPS upstream on 127.0.0.1 that records the Authorization header it receives and answers
// only whether it got one (never the value: the sandbox must not learn it from the answer).
async function startRecordingUpstream() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-upstream-'));
  const tls = await makeCertificates(dir);
  const seen = [];
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    seen.push(req.headers.authorization ?? null);
    req.resume();
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ got_authorization: Boolean(req.headers.authorization), path: req.url }));
  });
  await new Promise((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return {
    port: server.address().port, caFile: tls.caFile, seen,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => { fs.rmSync(dir, { recursive: true, force: true }); resolve(); });
    }),
  };
}

// server-everything behind a door that records the Authorization header and lets in only the
// operator's token: an MCP server that needs credentials the sandbox must never see.
async function startGuardedEverything(token) {
  const everything = await startEverything();
  const seen = [];
  const door = await startHttp((req, res) => {
    seen.push(req.headers.authorization ?? null);
    if (req.headers.authorization !== `Bearer ${token}`) {
      req.resume();
      res.writeHead(401, { 'Content-Type': 'text/plain' });
      res.end('a bearer token is required');
      return;
    }
    const headers = { ...req.headers, host: `127.0.0.1:${everything.port}` };
    const inner = http.request(
      { host: '127.0.0.1', port: everything.port, path: req.url, method: req.method, headers },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      },
    );
    inner.on('error', () => res.destroy());
    req.pipe(inner);
  });
  return {
    url: door.url('/mcp'), port: door.port, seen,
    stop: async () => { await door.stop(); await everything.stop(); },
  };
}

describe('egress secrets', () => {
  let upstream;
  let guarded;
  let config;
  let server;
  let secretDir;
  const token = `tok-${crypto.randomBytes(16).toString('hex')}`;
  before(async () => {
    upstream = await startRecordingUpstream();
    guarded = await startGuardedEverything(token);
    secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-secret-'));
    const tokenFile = path.join(secretDir, 'token');
    fs.writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    config = writeConfig({
      egress: {
        enabled: true,
        allow: [`127.0.0.1:${upstream.port}`],
        secrets: [
          { host: '127.0.0.1', port: upstream.port,
            headers: { Authorization: { file: tokenFile, prefix: 'Bearer ' } } },
          { host: '127.0.0.1', port: guarded.port,
            headers: { Authorization: { file: tokenFile, prefix: 'Bearer ' } } },
        ],
        upstream_ca_file: upstream.caFile,
      },
      // The tests run the sanitizer build, whose allocator keeps freed memory in quarantine: the
      // relay making the session CA and loading the system CAs outgrows the default 64 MiB.
      mcp: { allowlist: [`http://127.0.0.1:${guarded.port}/`], sidecar: { memory_mib: 256 } },
    });
    server = await connectStdio(['--config', config.file]);
  });
  after(async () => {
    await server?.client.close();
    await upstream?.close();
    await guarded?.stop();
    config?.remove();
    fs.rmSync(secretDir, { recursive: true, force: true });
  });

  test('the MCP relay calls an allowlisted server with the operator\'s token', async () => {
    // No egress: the session reaches the server through the MCP relay only, and neither the
    // client library in the sandbox nor its environment holds the token.
    const res = await call(server.client, 'run_code', {
      mcp_allowlist: [guarded.url],
      code: `
import json, os
from sandbox_mcp import connect
c = connect(${JSON.stringify(guarded.url)})
echo = c.call_tool("echo", {"message": "with the operator's token"})
secret = "${token.slice(0, 12)}" + "${token.slice(12)}"
print(json.dumps({"echo": echo, "env_holds": any(secret in v for v in os.environ.values()),
                  "proxy": os.environ.get("HTTPS_PROXY")}))
`,
    });
    assert.ok(!res.isError, res.content[0].text);
    const sc = res.structuredContent;
    assert.equal(sc.status, 'success', sc.stderr);
    const out = JSON.parse(sc.stdout.trim().split('\n').pop());
    assert.match(JSON.stringify(out.echo.content), /with the operator's token/);
    assert.equal(out.env_holds, false);
    assert.equal(out.proxy, null, 'a session without egress has no proxy');
    assert.ok(guarded.seen.length >= 2, `the server saw ${guarded.seen.length} request(s)`);
    assert.ok(guarded.seen.every((h) => h === `Bearer ${token}`), JSON.stringify(guarded.seen));
    const stats = await call(server.client, 'get_session_stats', { session_id: sc.session_id });
    assert.deepEqual(stats.structuredContent.mcp.secret_hosts, [`127.0.0.1:${guarded.port}`]);
    assert.equal(stats.structuredContent.mcp.egress, undefined);
    assert.ok(!JSON.stringify(stats).includes(token), 'get_session_stats shows the secret');
  });

  test('the proxy sets the header on each request; the sandbox trusts the session CA', async () => {
    // adversarial_egress_secrets looks for the secret in the sandbox and tries to redirect it.
    const res = await call(server.client, 'run_code', {
      egress: true,
      environment: { NO_PROXY: '', no_proxy: '' },
      timeout: 120,
      code: `
import json, os, urllib.request
answers = []
for _ in range(2):
    req = urllib.request.Request("https://127.0.0.1:${upstream.port}/api", headers={"Authorization": "Bearer fake"})
    answers.append(json.load(urllib.request.urlopen(req, timeout=30)))
print(json.dumps({"answers": answers, "bundle": os.environ.get("SSL_CERT_FILE")}))
`,
    });
    assert.ok(!res.isError, res.content[0].text);
    const sc = res.structuredContent;
    assert.equal(sc.status, 'success', sc.stderr);
    const out = JSON.parse(sc.stdout.trim().split('\n').pop());
    assert.deepEqual(out.answers.map((a) => a.got_authorization), [true, true]);
    assert.deepEqual(upstream.seen, [`Bearer ${token}`, `Bearer ${token}`]);
    assert.equal(out.bundle, '/run/mcp/ca-bundle.pem');
    const stats = await call(server.client, 'get_session_stats', { session_id: sc.session_id });
    const text = JSON.stringify(stats);
    assert.ok(!text.includes(token), 'get_session_stats shows the secret');
    assert.deepEqual(stats.structuredContent.mcp.secret_hosts, [`127.0.0.1:${upstream.port}`]);
    assert.ok(!server.stderr.join('').includes(token), 'the server log holds the secret');
  });
});
