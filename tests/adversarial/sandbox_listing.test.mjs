// Attack 5 of the adversarial review, as a user meets it: with Debian 12's own runsc every
// `ls`, `stat` and `find` in a sandbox failed with "Invalid argument" (it rejects statx with
// AT_NO_AUTOMOUNT, which coreutils uses). Under the default config (gVisor from
// bookworm-backports) the first things an agent runs must work, as the sandbox user.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertNoLeaks, connectStdio, snapshot } from './attack_lib.mjs';

let conn;
let before_;
before(async () => {
  before_ = await snapshot();
  conn = await connectStdio();
});
after(async () => {
  await conn?.client.close();
  await assertNoLeaks(before_);
});

async function shell(command, sessionId) {
  const args = sessionId ? { command, session_id: sessionId } : { command };
  const res = await conn.client.callTool({ name: 'run_shell', arguments: args });
  assert.ok(!res.isError, JSON.stringify(res.content));
  return res.structuredContent;
}

test('ls, stat and find work in a gVisor sandbox, as the sandbox user', async () => {
  const who = await shell('id -u; echo hi > /tmp/f.txt');
  const sid = who.session_id;
  assert.equal(who.stdout, '65534\n', 'code runs as the sandbox user');
  const stats = await conn.client.callTool({ name: 'get_session_stats', arguments: { session_id: sid } });
  assert.equal(stats.structuredContent.runtime, 'runsc', 'the sandbox runs under gVisor');
  for (const command of ['ls /', 'ls -la /tmp', 'stat /etc/passwd', 'stat -c %s /tmp/f.txt',
    'find /etc -maxdepth 1 -name passwd', 'ls /proc', 'ls -la /workspace', 'du -s /tmp', 'ls -R /tmp']) {
    const r = await shell(command, sid);
    assert.equal(r.exit_code, 0, `${command}: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /Invalid argument/, command);
  }
  assert.equal((await shell('stat -c %s /tmp/f.txt', sid)).stdout, '3\n');
  assert.equal((await shell('find /etc -maxdepth 1 -name passwd', sid)).stdout, '/etc/passwd\n');
  assert.match((await shell('ls /', sid)).stdout, /^bin\b[\s\S]*\betc\n[\s\S]*\btmp\n/m);
  await conn.client.callTool({ name: 'cleanup_session', arguments: { session_id: sid } });
});
