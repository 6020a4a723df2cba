// Attack: sandbox code getting past its egress proxy. The session may reach one allowed upstream
// (127.0.0.1:<allowed>, a TCP listener that counts every byte it receives); canary listeners on
// other loopback ports must never see a connection. From inside the runsc sandbox, raw sockets
// speak to the proxy (127.0.0.1:3128, forwarded by the agent) and try: the canary's address in
// every spelling (decimal, hex, short, IPv4-mapped IPv6, [::1]); a name that resolves to loopback
// (DNS answering with a special address: rebinding's effect); absolute-form with a Host naming the
// canary; a second request pipelined behind a refused CONNECT; the MCP server's own listener
// (even though the operator listed it); and, through an allowed tunnel, a TLS ClientHello naming
// another host, no name, or bytes that are not TLS at all. Must hold: every attempt is refused
// (403/400, or the tunnel closed before any byte), no canary is reached, the allowed upstream
// receives no byte from a refused tunnel, and every refusal is in the audit log.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  assertNoLeaks, connectHttp, snapshot, startHttpServer, stopServer,
} from './attack_lib.mjs';
import { freePort } from '../e2e/upstreams.mjs';

const REBIND_NAME = 'rebind.sandbox-mcp.test';

// A TCP listener on 127.0.0.1 counting connections and received bytes.
async function startCounter() {
  const counter = { connections: 0, bytes: 0, sockets: new Set() };
  counter.server = net.createServer((socket) => {
    counter.connections += 1;
    counter.sockets.add(socket);
    socket.on('data', (chunk) => {
      counter.bytes += chunk.length;
      socket.end();  // what got through is counted; the client sees the end at once
    });
    socket.on('error', () => {});
    socket.on('close', () => counter.sockets.delete(socket));
  });
  await new Promise((resolve) => counter.server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  counter.port = counter.server.address().port;
  counter.close = () => new Promise((resolve) => {
    for (const socket of counter.sockets) socket.destroy();
    counter.server.close(resolve);
  });
  return counter;
}

// Python run in the sandbox: each attempt sends raw bytes to the proxy and reports the status line
// it got, and, when a tunnel opened, sends `then` (hex) and reports whether anything came back
// before the proxy closed.
function attemptsScript(attempts) {
  return `
import json, socket, ssl
def hello(name):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname=name)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()
def attempt(raw, then=None):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=15)
    s.sendall(raw.encode())
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    status = head.split(b"\\r\\n", 1)[0].decode(errors="replace")
    after = None
    if status.startswith("HTTP/1.1 200") and then is not None:
        s.sendall(then)
        after = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                after += chunk
        except OSError:
            pass
        after = len(after)
    s.close()
    return {"status": status, "after": after}
attempts = ${JSON.stringify(attempts)}
results = []
for a in attempts:
    then = None
    if a.get("hello") is not None:
        then = hello(a["hello"]) if a["hello"] else hello(None)
    elif a.get("then"):
        then = a["then"].encode()
    results.append(attempt(a["raw"], then))
print(json.dumps(results))
`;
}

function connect(target) {
  return `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`;
}

describe('egress proxy bypass attempts', () => {
  let allowed;
  let canary;
  let server;
  let client;
  let configDir;
  let hostsBackup;
  let serverPort;
  let leaks;
  before(async () => {
    leaks = await snapshot();
    allowed = await startCounter();
    canary = await startCounter();
    serverPort = await freePort();
    // A name the operator lists that resolves to loopback (what a rebinding DNS answer does).
    hostsBackup = fs.readFileSync('/etc/hosts', 'utf8');
    fs.writeFileSync('/etc/hosts', `${hostsBackup.trimEnd()}\n127.0.0.1 ${REBIND_NAME}\n`);
    configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'egress-bypass-'));
    const config = path.join(configDir, 'config.json');
    fs.writeFileSync(config, JSON.stringify({
      egress: {
        enabled: true,
        allow: [`127.0.0.1:${allowed.port}`, `${REBIND_NAME}:${canary.port}`,
          `127.0.0.1:${serverPort}`],
      },
    }));
    server = await startHttpServer(['--config', config], {}, `127.0.0.1:${serverPort}`);
    ({ client } = await connectHttp(server.url));
  });
  after(async () => {
    if (hostsBackup !== undefined) fs.writeFileSync('/etc/hosts', hostsBackup);
    await client?.close();
    if (server) await stopServer(server);
    await allowed?.close();
    await canary?.close();
    fs.rmSync(configDir, { recursive: true, force: true });
  });

  test('every spelling of another address, loopback by DNS, a foreign Host and the server itself are refused', async () => {
    const c = canary.port;
    const refusedTargets = [
      `127.0.0.1:${c}`, `2130706433:${c}`, `0x7f000001:${c}`, `127.1:${c}`, `0177.0.0.1:${c}`,
      `[::ffff:127.0.0.1]:${c}`, `[::ffff:7f00:1]:${c}`, `[::1]:${c}`, `localhost:${c}`,
      `${REBIND_NAME}:${c}`, `127.0.0.1:${serverPort}`, `localhost:${serverPort}`,
    ];
    const attempts = refusedTargets.map((target) => ({ raw: connect(target) }));
    // Absolute form whose Host names the canary, and a request pipelined behind a refused one.
    attempts.push({
      raw: `GET http://127.0.0.1:${allowed.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${c}\r\n\r\n`,
    });
    attempts.push({ raw: `GET http://127.0.0.1:${serverPort}/mcp HTTP/1.1\r\nHost: 127.0.0.1:${serverPort}\r\n\r\n` });
    attempts.push({ raw: connect(`127.0.0.1:${c}`) + connect(`127.0.0.1:${allowed.port}`) });
    const res = await client.callTool({
      name: 'run_code', arguments: { code: attemptsScript(attempts), egress: true, timeout: 120 },
    });
    assert.ok(!res.isError, res.content?.[0]?.text);
    const sc = res.structuredContent;
    const results = JSON.parse(sc.stdout.trim().split('\n').pop());
    results.forEach((result, i) => {
      assert.match(result.status, /^HTTP\/1\.1 (403|400) /, `${attempts[i].raw.split('\r\n')[0]} -> ${result.status}`);
    });
    assert.equal(canary.connections, 0, 'a canary was reached');
    assert.equal(allowed.connections, 0, 'a refused request reached the allowed upstream');
    // The rebinding attempt says why: the name resolved to loopback.
    assert.match(results[9].status, /loopback|127\.0\.0\.1/, results[9].status);
    // The tool result lists the refusals (bounded) for the model.
    assert.ok((sc.warnings ?? []).some((w) => w.startsWith('egress refused CONNECT')),
      JSON.stringify(sc.warnings));
  });

  test('through an allowed tunnel, only a ClientHello for that host passes', async () => {
    const target = `127.0.0.1:${allowed.port}`;
    const attempts = [
      { raw: connect(target), hello: 'canary.example' },
      { raw: connect(target), then: `GET / HTTP/1.1\r\nHost: 127.0.0.1:${canary.port}\r\n\r\n` },
      { raw: connect(`localhost:${allowed.port}`), hello: 'localhost' },  // no rule for the name
    ];
    const res = await client.callTool({
      name: 'run_code', arguments: { code: attemptsScript(attempts), egress: true, timeout: 120 },
    });
    assert.ok(!res.isError, res.content?.[0]?.text);
    const results = JSON.parse(res.structuredContent.stdout.trim().split('\n').pop());
    assert.match(results[0].status, /^HTTP\/1\.1 200/);
    assert.equal(results[0].after, 0, 'the tunnel answered a hello for another host');
    assert.match(results[1].status, /^HTTP\/1\.1 200/);
    assert.equal(results[1].after, 0);
    assert.match(results[2].status, /^HTTP\/1\.1 403/);
    assert.equal(allowed.bytes, 0, 'bytes of a refused tunnel reached the upstream');
    assert.equal(canary.connections, 0);
    // An IP-literal target with a ClientHello without a name is a real tunnel: bytes pass.
    const ok = await client.callTool({
      name: 'run_code',
      arguments: { code: attemptsScript([{ raw: connect(target), hello: '' }]), egress: true },
    });
    const passed = JSON.parse(ok.structuredContent.stdout.trim().split('\n').pop());
    assert.match(passed[0].status, /^HTTP\/1\.1 200/);
    assert.ok(allowed.bytes > 0, 'a nameless hello to an allowed address did not pass');
  });

  test('the server left no sandbox or sidecar behind', async () => {
    await client.close();
    client = null;
    await stopServer(server);
    server = null;
    await assertNoLeaks(leaks);
  });
});
