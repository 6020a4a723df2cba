// The test package index (package_index.mjs) on the host, no Docker: its certificate satisfies
// Python's ssl (strict verification) and Node; real pip and npm install from it, dependencies
// included; unknown paths are 404; it listens on 127.0.0.1 only and cleans up after itself.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { startPackageIndex } from './package_index.mjs';

const run = promisify(execFile);

// Five Python packages, three of them reached only as dependencies (alpha -> beta -> gamma,
// epsilon -> Delta.Pkg), and three npm packages (one scoped) with a dependency.
const PYTHON = [
  { name: 'alpha', version: '1.0', source: 'from beta import VALUE as BETA\nVALUE = 1 + BETA\n', requires: ['beta>=1.0'] },
  { name: 'beta', version: '1.0', source: 'VALUE = 10\n', requires: ['gamma'] },
  { name: 'beta', version: '1.1', source: 'from gamma import VALUE as GAMMA\nVALUE = 100 + GAMMA\n', requires: ['gamma'] },
  { name: 'gamma', version: '0.3', source: 'VALUE = 1000\n' },
  { name: 'Delta.Pkg', version: '2.0', source: 'VALUE = 4\n' },
  { name: 'epsilon', version: '1.0', source: 'import delta_pkg\nVALUE = delta_pkg.VALUE + 1\n', requires: ['delta-pkg==2.0'] },
];
const NPM = [
  { name: 'sb-one', version: '1.0.0', dependencies: { 'sb-two': '^1.0.0' },
    files: { 'index.js': "module.exports = 'one+' + require('sb-two');\n" } },
  { name: 'sb-two', version: '1.0.0', files: { 'index.js': "module.exports = 'two@1.0.0';\n" } },
  { name: 'sb-two', version: '1.2.0', files: { 'index.js': "module.exports = 'two@1.2.0';\n" } },
  { name: '@sandbox-mcp/three', version: '0.1.0', files: { 'index.js': 'module.exports = 3;\n' } },
];

let index;
let work;
before(async () => {
  index = await startPackageIndex({ python: PYTHON, npm: NPM });
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-index-test-'));
});
after(async () => {
  await index?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

// The host's environment minus what would point pip or npm elsewhere. REQUESTS_CA_BUNDLE and
// CURL_CA_BUNDLE even override pip's --cert (requests prefers them to a session's CA file).
function hostEnv(extra = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) =>
    !/^(PIP_|NPM_CONFIG_|REQUESTS_CA_BUNDLE$|CURL_CA_BUNDLE$|SSL_CERT_)/i.test(key)));
  return { ...env, PIP_CONFIG_FILE: os.devNull, npm_config_userconfig: os.devNull, ...extra };
}

function get(urlPath, options = { ca: index.caPem }) {
  return new Promise((resolve, reject) => {
    https.get(`${index.url}${urlPath}`, options, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
    }).on('error', reject);
  });
}

// `python3 -m pip` when the host has it; null otherwise (the urllib test still checks the TLS).
async function hostPip() {
  try {
    await run('python3', ['-m', 'pip', '--version'], { env: hostEnv() });
    return ['python3', '-m', 'pip'];
  } catch {
    return null;
  }
}

test('listens on 127.0.0.1 only, answers 404 for unknown paths and logs every request', async () => {
  assert.equal(index.host, '127.0.0.1');
  assert.match(index.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  assert.match(index.caPem, /^-----BEGIN CERTIFICATE-----/);
  assert.equal(fs.readFileSync(index.caFile, 'utf8'), index.caPem);
  for (const missing of ['/', '/simple/zeta/', '/files/nothing.whl', '/sb-none', '/%zz']) {
    assert.equal((await get(missing)).status, 404, missing);
  }
  assert.ok(index.requests.includes('/sb-none'), index.requests.join(' '));
  const listing = await get('/simple/');
  assert.equal(listing.status, 200);
  assert.match(listing.body, /href="\/simple\/delta-pkg\/"/);
  // Without the test CA the certificate is not trusted.
  await assert.rejects(get('/simple/', {}), /self[- ]signed|unable to (get|verify)/i);
});

test("Python's ssl verifies the certificate strictly for 127.0.0.1 and localhost", async () => {
  const script = [
    'import ssl, sys, urllib.request',
    'ctx = ssl.create_default_context(cafile=sys.argv[1])',
    'ctx.verify_flags |= getattr(ssl, "VERIFY_X509_STRICT", 0)',
    'for host in ("127.0.0.1", "localhost"):',
    '    url = "https://%s:%s/simple/beta/" % (host, sys.argv[2])',
    '    print(urllib.request.urlopen(url, context=ctx).read().decode().count("<a "))',
  ].join('\n');
  const { stdout } = await run('python3', ['-c', script, index.caFile, String(index.port)],
    { env: hostEnv() });
  assert.equal(stdout, '2\n2\n');
});

test('pip installs from the simple index with the test CA, dependencies included', async (t) => {
  const pip = await hostPip();
  if (!pip) return t.skip('no pip on this host (python3 -m pip); scripts/setup.sh installs python3-pip');
  const target = path.join(work, 'site');
  await run(pip[0], [...pip.slice(1), 'install', '--no-cache-dir', '--disable-pip-version-check',
    '--no-input', '--index-url', index.simpleUrl, '--cert', index.caFile, '--target', target,
    'alpha', 'epsilon'], { env: hostEnv() });
  const { stdout } = await run('python3', ['-c',
    'import alpha, beta, gamma, delta_pkg, epsilon; print(alpha.VALUE, epsilon.VALUE)'],
  { env: hostEnv({ PYTHONPATH: target }) });
  assert.equal(stdout, '1101 5\n', 'beta 1.1 (the newest) was installed');
  for (const wheel of ['alpha-1.0', 'beta-1.1', 'gamma-0.3', 'Delta_Pkg-2.0', 'epsilon-1.0']) {
    assert.ok(index.requests.includes(`/files/${wheel}-py3-none-any.whl`), `${wheel}: ${index.requests.join(' ')}`);
  }
  assert.ok(index.requests.includes('/simple/delta-pkg/'));
});

test('npm installs from the registry with the test CA, scoped names and dependencies included', async () => {
  const prefix = path.join(work, 'npm');
  const cache = path.join(work, 'npm-cache');
  await run('npm', ['install', '--prefix', prefix, '--registry', index.registryUrl,
    '--cafile', index.caFile, '--cache', cache, '--no-audit', '--no-fund', '--no-update-notifier',
    'sb-one', '@sandbox-mcp/three'], { env: hostEnv() });
  const { stdout } = await run(process.execPath, ['-p',
    'require("sb-one") + " " + require("@sandbox-mcp/three")'], { cwd: prefix });
  assert.equal(stdout, 'one+two@1.2.0 3\n');
  for (const tarball of ['/sb-one/-/sb-one-1.0.0.tgz', '/sb-two/-/sb-two-1.2.0.tgz',
    '/@sandbox-mcp/three/-/three-0.1.0.tgz']) {
    assert.ok(index.requests.includes(tarball), `${tarball}: ${index.requests.join(' ')}`);
  }
  assert.ok(index.requests.includes('/@sandbox-mcp%2fthree'), index.requests.join(' '));
});

test('clientEnv names the index and the CA for pip and npm', () => {
  assert.deepEqual(index.clientEnv('/tmp/ca.pem'), {
    PIP_INDEX_URL: `${index.url}/simple/`,
    PIP_CERT: '/tmp/ca.pem',
    npm_config_registry: `${index.url}/`,
    npm_config_cafile: '/tmp/ca.pem',
  });
});

test('close() stops the server and removes the CA', async () => {
  const other = await startPackageIndex({ python: PYTHON.slice(3, 4) });
  const caDir = path.dirname(other.caFile);
  assert.ok(fs.existsSync(caDir));
  await other.close();
  assert.equal(fs.existsSync(caDir), false);
  await assert.rejects(new Promise((resolve, reject) => {
    https.get(`${other.url}/simple/`, { ca: other.caPem }, resolve).on('error', reject);
  }), /ECONNREFUSED/);
});
