// A package index for tests that run pip and npm: HTTPS on 127.0.0.1 (port 0), with a test CA and
// a server certificate made with the openssl command line at start, serving
//   - a PEP 503 simple index (/simple/, /simple/<normalized name>/) whose links point at wheels
//     (/files/<wheel>#sha256=...) built here: pure-Python py3-none-any, Requires-Dist allowed;
//   - an npm registry: metadata at /<name> (/@scope%2fname for scoped names) and tarballs at
//     /<name>/-/<basename>-<version>.tgz, built here with a small tar writer and zlib.
// Everything is built in memory at start, nothing comes from the network. Unknown paths get 404;
// every request's path is logged in `requests`. close() stops the server and removes the CA.
//
//   const index = await startPackageIndex({
//     python: [{ name: 'alpha', version: '1.0', source: 'VALUE = 1\n', requires: ['beta>=1'] }],
//     npm: [{ name: '@demo/one', version: '1.0.0', files: { 'index.js': 'module.exports = 1;\n' },
//             dependencies: { two: '^1.0.0' } }],
//   });
//   pip install --index-url ${index.simpleUrl} --cert ${index.caFile} alpha
//   npm install --registry ${index.registryUrl} --cafile ${index.caFile} @demo/one
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

const run = promisify(execFile);
const HOST = '127.0.0.1';  // never any other address: test traffic stays on loopback

// --- TLS: a CA and a certificate for 127.0.0.1 and localhost --------------------------------
// Extensions as strict verifiers want them (Python 3.13's VERIFY_X509_STRICT, Node, OpenSSL):
// a critical CA basicConstraints and keyUsage, key identifiers, serverAuth, IP and DNS SANs.
export async function makeCertificates(dir, extraNames = []) {
  const file = (name) => path.join(dir, name);
  const openssl = (...args) => run('openssl', args).catch((error) => {
    throw new Error(`openssl ${args[0]} failed (is the openssl command installed?): ${error.message}`);
  });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await openssl('req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.pem'),
    '-days', '2', '-subj', '/CN=sandbox-mcp test package index CA',
    '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  await openssl('req', '-new', ...ec, '-keyout', file('server.key'), '-out', file('server.csr'),
    '-subj', `/CN=${HOST}`);
  const names = [`IP:${HOST}`, 'DNS:localhost', ...extraNames.map((name) => `DNS:${name}`)];
  fs.writeFileSync(file('server.ext'), [
    `subjectAltName=${names.join(',')}`,
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=serverAuth',
    'subjectKeyIdentifier=hash',
    'authorityKeyIdentifier=keyid,issuer',
  ].join('\n') + '\n');
  await openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'),
    '-CAkey', file('ca.key'), '-set_serial', `0x${crypto.randomBytes(8).toString('hex')}`,
    '-days', '2', '-extfile', file('server.ext'), '-out', file('server.pem'));
  return {
    caFile: file('ca.pem'),
    caPem: fs.readFileSync(file('ca.pem'), 'utf8'),
    key: fs.readFileSync(file('server.key')),
    cert: fs.readFileSync(file('server.pem')),
  };
}

// --- zip (wheels) ----------------------------------------------------------------------------
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data) {
  let crc = 0xffffffff;
  for (const byte of data) crc = CRC_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

// A zip archive of `files` ([name, Buffer] pairs), deflated, dated 1980-01-01, mode 0644.
function zip(files) {
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const [name, data] of files) {
    const nameBytes = Buffer.from(name);
    const packed = zlib.deflateRawSync(data);
    const fields = (header, at) => {
      header.writeUInt16LE(0x0800, at);  // flags: UTF-8 names
      header.writeUInt16LE(8, at + 2);  // deflate
      header.writeUInt16LE(0, at + 4);  // time
      header.writeUInt16LE((0 << 9) | (1 << 5) | 1, at + 6);  // date: 1980-01-01
      header.writeUInt32LE(crc32(data), at + 8);
      header.writeUInt32LE(packed.length, at + 12);
      header.writeUInt32LE(data.length, at + 16);
      header.writeUInt16LE(nameBytes.length, at + 20);
    };
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    fields(local, 6);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4);  // made by: Unix, zip 2.0 (so the mode counts)
    central.writeUInt16LE(20, 6);
    fields(central, 8);
    central.writeUInt32LE((0o100644 << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, packed);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + packed.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

// --- wheels and the simple index ---------------------------------------------------------------
// PEP 503 name normalization; PEP 427 escaping of a distribution name in file names.
export function normalizePythonName(name) {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

function wheelDistName(name) {
  return name.replace(/[-_.]+/g, '_');
}

function recordHash(data) {
  return `sha256=${crypto.createHash('sha256').update(data).digest('base64url')}`;
}

// A py3-none-any wheel: <module>/__init__.py (`source`) plus the dist-info PEP 427 requires.
// { file (its name), body (a Buffer), sha256 (hex), project (normalized name), displayName }.
// Tests that install a local file (`pip install ./x.whl`, no index) use it directly too.
export function buildWheel({ name, version, source = '', module, requires = [], summary = '' }) {
  const dist = wheelDistName(name);
  const importName = module ?? normalizePythonName(name).replace(/-/g, '_');
  const info = `${dist}-${version}.dist-info`;
  const metadata = ['Metadata-Version: 2.1', `Name: ${name}`, `Version: ${version}`,
    `Summary: ${summary || `${name}, a test package`}`,
    ...requires.map((requirement) => `Requires-Dist: ${requirement}`)].join('\n') + '\n';
  const wheelInfo = 'Wheel-Version: 1.0\nGenerator: sandbox-mcp-e2e\nRoot-Is-Purelib: true\n' +
    'Tag: py3-none-any\n';
  const files = [
    [`${importName}/__init__.py`, Buffer.from(source)],
    [`${info}/METADATA`, Buffer.from(metadata)],
    [`${info}/WHEEL`, Buffer.from(wheelInfo)],
  ];
  const record = files.map(([file, data]) => `${file},${recordHash(data)},${data.length}\n`).join('') +
    `${info}/RECORD,,\n`;
  files.push([`${info}/RECORD`, Buffer.from(record)]);
  const body = zip(files);
  return {
    project: normalizePythonName(name),
    displayName: name,
    file: `${dist}-${version}-py3-none-any.whl`,
    body,
    sha256: crypto.createHash('sha256').update(body).digest('hex'),
  };
}

const escapeHtml = (text) => text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

function htmlPage(title, links) {
  const anchors = links.map(([href, text]) => `    <a href="${escapeHtml(href)}">${escapeHtml(text)}</a><br/>`);
  return `<!DOCTYPE html>\n<html>\n  <head><meta name="pypi:repository-version" content="1.0">` +
    `<title>${escapeHtml(title)}</title></head>\n  <body>\n${anchors.join('\n')}\n  </body>\n</html>\n`;
}

function addPythonRoutes(routes, packages) {
  const wheels = packages.map(buildWheel);
  const projects = new Map();
  for (const wheel of wheels) {
    if (!projects.has(wheel.project)) projects.set(wheel.project, []);
    projects.get(wheel.project).push(wheel);
    routes.set(`/files/${wheel.file}`, { type: 'application/octet-stream', body: wheel.body });
  }
  const html = (text) => ({ type: 'text/html; charset=utf-8', body: Buffer.from(text) });
  routes.set('/simple/', html(htmlPage('Simple index',
    [...projects].map(([project, list]) => [`/simple/${project}/`, list[0].displayName]))));
  for (const [project, list] of projects) {
    routes.set(`/simple/${project}/`, html(htmlPage(`Links for ${project}`,
      list.map((wheel) => [`/files/${wheel.file}#sha256=${wheel.sha256}`, wheel.file]))));
  }
}

// --- npm tarballs and registry metadata ---------------------------------------------------------
function octal(value, width) {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

// A ustar header for a regular file.
function tarHeader(name, size) {
  const header = Buffer.alloc(512);
  if (Buffer.byteLength(name) > 100) throw new Error(`tar entry name too long: ${name}`);
  header.write(name, 0);
  header.write(octal(0o644, 8), 100);
  header.write(octal(0, 8), 108);  // uid
  header.write(octal(0, 8), 116);  // gid
  header.write(octal(size, 12), 124);
  header.write(octal(Math.floor(Date.UTC(2000, 0, 1) / 1000), 12), 136);
  header.write(' '.repeat(8), 148);  // the checksum counts its own field as spaces
  header.write('0', 156);  // regular file
  header.write('ustar\0', 257);
  header.write('00', 263);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return header;
}

// A gzipped tarball of `files` ({relative path: text}) under package/, as `npm pack` makes.
function tgz(files) {
  const blocks = [];
  for (const [name, text] of Object.entries(files)) {
    const data = Buffer.from(text);
    blocks.push(tarHeader(`package/${name}`, data.length), data,
      Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return zlib.gzipSync(Buffer.concat(blocks));
}

// An npm package tarball: { manifest, tarballPath, body (a Buffer), shasum, integrity }.
export function buildNpmPackage({ name, version, files = {}, dependencies = {} }) {
  const manifest = { name, version, main: 'index.js', dependencies };
  const contents = { 'package.json': JSON.stringify(manifest, null, 2) + '\n',
    'index.js': 'module.exports = {};\n', ...files };
  const body = tgz(contents);
  return {
    manifest: JSON.parse(contents['package.json']),
    tarballPath: `/${name}/-/${name.split('/').pop()}-${version}.tgz`,
    body,
    shasum: crypto.createHash('sha1').update(body).digest('hex'),
    integrity: `sha512-${crypto.createHash('sha512').update(body).digest('base64')}`,
  };
}

// Compares dotted numeric versions (enough for test packages): the largest is dist-tags.latest.
function compareVersions(a, b) {
  const pa = a.split(/[.-]/).map(Number);
  const pb = b.split(/[.-]/).map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i += 1) {
    const d = (pa[i] || 0) - (pb[i] || 0);
    if (d !== 0) return d;
  }
  return 0;
}

function addNpmRoutes(routes, packages, baseUrl) {
  const byName = new Map();
  for (const spec of packages) {
    const built = buildNpmPackage(spec);
    routes.set(built.tarballPath, { type: 'application/octet-stream', body: built.body });
    if (!byName.has(spec.name)) byName.set(spec.name, []);
    byName.get(spec.name).push(built);
  }
  for (const [name, builds] of byName) {
    const versions = {};
    for (const built of builds) {
      versions[built.manifest.version] = {
        ...built.manifest,
        _id: `${name}@${built.manifest.version}`,
        dist: { tarball: `${baseUrl}${built.tarballPath}`, shasum: built.shasum, integrity: built.integrity },
      };
    }
    const latest = Object.keys(versions).sort(compareVersions).pop();
    const packument = { _id: name, name, 'dist-tags': { latest }, versions };
    routes.set(`/${name}`, { type: 'application/json', body: Buffer.from(JSON.stringify(packument)) });
  }
}

// --- the server --------------------------------------------------------------------------------
// startPackageIndex({ python, npm, extraNames }) -> Promise<{ url, host, port, simpleUrl,
//   registryUrl, caPem, caFile, requests, clientEnv(caPath), close() }>
//   python: [{ name, version, source (the module's __init__.py), module (import name; default
//            from the name), requires (Requires-Dist strings, e.g. 'beta>=1.0') }]
//   npm:    [{ name (may be @scope/name), version, files ({path: text} under package/; a default
//            package.json and index.js unless given), dependencies ({name: range}) }]
//   extraNames: more DNS names for the certificate (it always has IP 127.0.0.1 and localhost).
// requests: the path (with query) of every request, in order, answered or not.
// clientEnv(caPath = caFile): pip's and npm's variables that point them at this index and trust
// its CA, with the CA file at caPath (e.g. where a test copied it into a sandbox).
export async function startPackageIndex({ python = [], npm = [], extraNames = [] } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-index-'));
  try {
    const tls = await makeCertificates(dir, extraNames);
    const routes = new Map();
    addPythonRoutes(routes, python);
    const requests = [];
    const sockets = new Set();
    const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
      requests.push(req.url);
      req.resume();
      let route;
      try {
        route = routes.get(decodeURIComponent(new URL(req.url, 'https://index').pathname));
      } catch {
        route = undefined;  // a malformed escape
      }
      if (!route || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(404, { 'Content-Type': 'text/plain', 'Content-Length': '10' });
        res.end(req.method === 'HEAD' ? undefined : 'not found\n');
        return;
      }
      res.writeHead(200, { 'Content-Type': route.type, 'Content-Length': String(route.body.length) });
      res.end(req.method === 'HEAD' ? undefined : route.body);
    });
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: HOST, port: 0 }, resolve);
    });
    const { port } = server.address();
    const url = `https://${HOST}:${port}`;
    addNpmRoutes(routes, npm, url);
    return {
      url,
      host: HOST,
      port,
      simpleUrl: `${url}/simple/`,
      registryUrl: `${url}/`,
      caPem: tls.caPem,
      caFile: tls.caFile,
      requests,
      clientEnv: (caPath = tls.caFile) => ({
        PIP_INDEX_URL: `${url}/simple/`,
        PIP_CERT: caPath,
        npm_config_registry: `${url}/`,
        npm_config_cafile: caPath,
      }),
      close: () => new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => {
          fs.rmSync(dir, { recursive: true, force: true });
          resolve();
        });
      }),
    };
  } catch (error) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
