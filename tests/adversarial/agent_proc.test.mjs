// Code in the sandbox attacks the agent (PID 1) that owns the session's channel: /proc/1/fd/*,
// /proc/1/mem, /proc/1/environ, ptrace, kill, and the Python driver's own pipes to the agent.
// Runs in real sandboxes (dockerd + runsc) through the official MCP client. Every attempt must
// fail, the session must keep its state, and the server log must carry no sandbox text at WARN.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connectStdio, containersOfSession, sandboxContainerId, waitFor } from './attack_lib.mjs';

let conn;
before(async () => {
  conn = await connectStdio();
});
after(async () => {
  await conn?.client.close();
});

async function call(name, args) {
  const res = await conn.client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  return res;
}

async function runCode(sid, code) {
  const res = await call('run_code', { code, session_id: sid });
  assert.ok(!res.isError, `run_code failed: ${JSON.stringify(res.content)}`);
  return res.structuredContent;
}

// Tries everything from inside the sandbox and returns what succeeded (should be nothing).
const PROC_ATTACK = String.raw`
import ctypes, json, os, signal, struct
libc = ctypes.CDLL(None, use_errno=True)
won = []
forged = struct.pack(">I", 2) + b"{}"
for path, flags in [("/proc/1/fd/0", os.O_RDONLY | os.O_NONBLOCK), ("/proc/1/fd/0", os.O_WRONLY),
                    ("/proc/1/fd/1", os.O_WRONLY), ("/proc/1/fd/1", os.O_RDONLY | os.O_NONBLOCK),
                    ("/proc/1/fd/2", os.O_WRONLY), ("/proc/1/mem", os.O_RDONLY),
                    ("/proc/1/mem", os.O_RDWR)]:
    try:
        fd = os.open(path, flags)
    except OSError:
        continue
    won.append("open %s %d" % (path, flags))
    try:
        if flags & (os.O_WRONLY | os.O_RDWR):
            os.write(fd, b"sandbox-agent: error: forged log line\n" if path.endswith("/2") else forged)
    except OSError:
        pass
    os.close(fd)
try:
    env = open("/proc/1/environ", "rb").read()
    if env.strip(b"\0"):
        won.append("read /proc/1/environ: %r" % env[:80])
except OSError:
    pass
try:
    for line in open("/proc/1/status"):
        if line.startswith(("CapPrm:", "CapEff:")) and int(line.split()[1], 16) != 0:
            won.append("the agent holds capabilities: " + line.strip())
except OSError:
    pass
if libc.ptrace(16, 1, 0, 0) == 0:  # PTRACE_ATTACH
    won.append("ptrace attach 1")
    libc.ptrace(17, 1, 0, 0)  # PTRACE_DETACH
if libc.ptrace(0x4206, 1, 0, 0) == 0:  # PTRACE_SEIZE
    won.append("ptrace seize 1")
# Any fd of any other process that reaches the server: the agent's channel socket and its stdio
# (host fds under gVisor, "host:[N]", whatever their number now) or any other socket. The agent's pipes to this
# session's own processes (the driver's, a shell's, the warm shell's stdio, created inside the
# sandbox: "pipe:[N]") carry only what this code controls anyway (its cells, its output), so they
# are not the channel; under runsc they can be reopened because gVisor owns a pipe by its
# creator's effective uid (the agent's is the code user's, so files it writes belong to that
# user). The same goes for /dev/null, and for a file this code can open by its path itself.
me = os.getpid()
for pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) != me]:
    try:
        fds = os.listdir("/proc/%s/fd" % pid)
    except OSError:
        continue
    for fd_name in fds:
        path = "/proc/%s/fd/%s" % (pid, fd_name)
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        if target.startswith("pipe:") or target == "/dev/null":
            continue
        for flags in (os.O_WRONLY | os.O_NONBLOCK, os.O_RDONLY | os.O_NONBLOCK):
            try:
                fd = os.open(path, flags)
            except OSError:
                continue
            os.close(fd)
            # A file this code may open by its own path anyway (a library a starting process is
            # loading, say) gains it nothing; only what it could not reach otherwise counts.
            if target.startswith("/"):
                try:
                    os.close(os.open(target, flags))
                    continue
                except OSError:
                    pass
            won.append("open %s (%s) flags %d" % (path, target, flags))
for sig in (signal.SIGSTOP, signal.SIGKILL):
    try:
        os.kill(1, sig)
        won.append("kill 1 with %d" % sig)
    except OSError:
        pass
print(json.dumps(won))
`;

test('sandbox code cannot open, ptrace, signal or write into the agent (PID 1)', async () => {
  const first = await runCode(undefined, 'secret = 42\nimport os\n(os.getuid(), os.geteuid())');
  const sid = first.session_id;
  assert.equal(first.result, '(65534, 65534)', 'code runs as nobody');
  const attack = await runCode(sid, PROC_ATTACK);
  assert.deepEqual(JSON.parse(attack.stdout), [], `attacks that worked: ${attack.stdout}`);
  // The channel is intact: same sandbox, state kept, nothing lost.
  const after = await runCode(sid, 'secret + 1');
  assert.equal(after.result, '43');
  assert.equal(after.state_lost, false);
  assert.equal(after.session_created, false);
  const shell = await call('run_shell', { command: 'kill -9 1; kill -STOP 1; echo done', session_id: sid });
  assert.ok(!shell.isError);
  assert.match(shell.structuredContent.stderr, /not permitted/i);
  assert.equal((await runCode(sid, 'secret')).result, '42');
  const ids = [await sandboxContainerId(conn.client, sid)];
  await call('cleanup_session', { session_id: sid });
  await waitFor(async () => (await containersOfSession(sid, ids)).length === 0, 15000, 'removal');
});

test('forged and malformed driver replies only affect the cell that sent them', async () => {
  const first = await runCode(undefined, 'kept = "yes"');
  const sid = first.session_id;
  // User code shares the Python driver's process: fd 4 is its reply pipe to the agent.
  const forged = String.raw`
import os
os.write(4, b'{"status": 5, "exit_code": "x", "result": ["not", "a", "string"]}\n')
os.write(4, b'\xff\xfe not json at all\n')
os.write(4, b'{"ready": "again", "version": 12}\n')
os.write(4, b'[' * 100000 + b'\n')
os.write(4, b'{"status": "success", "exit_code": 0, "result": "' + b'R' * (8 << 20) + b'"}\n')
'the real reply'
`;
  const res = await call('run_code', { code: forged, session_id: sid });
  // A reply must name the cell it answers (driver.py echoes the agent's cell number): none of
  // these lines does, so the cell ends with its real reply and no line is left for the next one.
  assert.ok(!res.isError, JSON.stringify(res.content).slice(0, 500));
  assert.equal(res.structuredContent.status, 'success');
  assert.equal(res.structuredContent.result, "'the real reply'", 'a forged line was taken for the reply');
  const next = await call('run_code', { code: 'kept', session_id: sid });
  assert.ok(!next.isError, JSON.stringify(next.content).slice(0, 500));
  assert.equal(next.structuredContent.state_lost, false, 'the agent or the interpreter was lost');
  assert.equal(next.structuredContent.result, "'yes'", 'the next cell got a stale reply');
  const other = await runCode(undefined, '6 * 7');
  assert.equal(other.result, '42');
  await call('cleanup_session', { session_id: sid });
  await call('cleanup_session', { session_id: other.session_id });
});

test('a 100 MB print flood is capped and the server keeps serving', async () => {
  const flood = await runCode(undefined,
    'import sys\nfor _ in range(100):\n    sys.stdout.write("x" * (1 << 20))\nsys.stdout.flush()\n"done"');
  assert.equal(flood.result, "'done'");
  assert.equal(flood.truncated, true);
  assert.ok(flood.stdout.length <= 4 << 20, `stdout of ${flood.stdout.length} bytes`);
  assert.ok(flood.stdout_bytes >= 100 * (1 << 20));
  const again = await runCode(flood.session_id, '1 + 1');
  assert.equal(again.result, '2');
  await call('cleanup_session', { session_id: flood.session_id });
});

test('nothing the sandboxes wrote reached the server log at WARN or above', () => {
  const log = conn.stderr.join('');
  for (const line of log.split('\n')) {
    if (/\[(warning|error|critical)\]/.test(line)) {
      assert.doesNotMatch(line, /forged|RRRR|not json|xxxx/, `sandbox text at WARN: ${line}`);
    }
  }
});
