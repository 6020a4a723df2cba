// A small web site for the preview-URL tests, run INSIDE the sandbox: the image has Node.js (the
// Debian 12 one, 18.x) but no npm packages, so the server uses only node's built-in modules. It
// exercises what a preview proxy must carry: a plain page, an image, a Server-Sent Events stream
// (chunked, never ending) and a WebSocket (an HTTP upgrade, then frames both ways).
//
//   node server.cjs PORT PNG_PATH   listens on 127.0.0.1:PORT (0: any free port), prints
//                                   "listening on 127.0.0.1:<port>" once it accepts connections
// (CommonJS: a .cjs name keeps it so whatever package.json a directory has.)
//
//   /           page whose script fills #plot-status ("loaded WxH"), #ws-status ("echo: ping-...")
//               and #sse-status (first event's data, "tick 1"; data-events counts them all)
//   /plot.png   PNG_PATH's bytes, read per request (the file may appear after the server starts)
//   /events     text/event-stream: "data: tick N" every 200 ms for as long as the client stays
//   /ws         WebSocket echo (text and binary); answers ping with pong and close with close

export const PREVIEW_SERVER_JS = String.raw`'use strict';
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');

const port = Number(process.argv[2]);
const pngPath = process.argv[3];

const PAGE = ${'`'}<!doctype html>
<html><head><meta charset="utf-8"><title>sandbox preview</title>
<link rel="icon" href="data:,"></head>
<body>
<h1>sandbox preview</h1>
<img id="plot" src="/plot.png" alt="plot">
<p>plot: <span id="plot-status">loading</span></p>
<p>websocket: <span id="ws-status">connecting</span></p>
<p>events: <span id="sse-status" data-events="0">waiting</span></p>
<script>
const show = (id, text) => { document.getElementById(id).textContent = text; };

const img = document.getElementById('plot');
const loaded = () => show('plot-status', 'loaded ' + img.naturalWidth + 'x' + img.naturalHeight);
if (img.complete && img.naturalWidth) loaded(); else img.addEventListener('load', loaded);
img.addEventListener('error', () => show('plot-status', 'error'));

// Same origin as the page, whatever URL the browser used (a preview proxy's host and port).
const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws');
const ping = 'ping-' + Math.random().toString(36).slice(2);
let echoed = false;
ws.onopen = () => ws.send(ping);
ws.onmessage = (ev) => { echoed = true; show('ws-status', 'echo: ' + ev.data); };
ws.onclose = (ev) => { if (!echoed) show('ws-status', 'closed ' + ev.code); };

const sse = document.getElementById('sse-status');
const events = new EventSource('/events');
events.onmessage = (ev) => {
  if (sse.dataset.events === '0') sse.textContent = ev.data;
  sse.dataset.events = String(Number(sse.dataset.events) + 1);
};
events.onerror = () => { if (sse.dataset.events === '0') sse.textContent = 'error'; };
</script>
</body></html>
${'`'};

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x').pathname;
  if (url === '/') {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(PAGE);
  } else if (url === '/plot.png') {
    fs.readFile(pngPath, (err, data) => {
      if (err) { res.writeHead(404, { 'Content-Type': 'text/plain' }); res.end(err.message); return; }
      res.writeHead(200, { 'Content-Type': 'image/png', 'Cache-Control': 'no-store' });
      res.end(data);
    });
  } else if (url === '/events') {
    // No Content-Length: chunked, and each write goes out at once (a proxy must not buffer it).
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' });
    let n = 0;
    const tick = () => res.write('data: tick ' + ++n + '\n\n');
    tick();
    const timer = setInterval(tick, 200);
    res.on('close', () => clearInterval(timer));
  } else {
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('not found\n');
  }
});

// WebSocket (RFC 6455), written out because the sandbox has no npm packages.
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const MAX_MESSAGE = 1 << 20;

function frame(opcode, payload) {
  const n = payload.length;
  const head = Buffer.alloc(n < 126 ? 2 : n < 65536 ? 4 : 10);
  head[0] = 0x80 | opcode; // FIN: the server never fragments; server frames are not masked
  if (n < 126) head[1] = n;
  else if (n < 65536) { head[1] = 126; head.writeUInt16BE(n, 2); }
  else { head[1] = 127; head.writeBigUInt64BE(BigInt(n), 2); }
  return Buffer.concat([head, payload]);
}

server.on('upgrade', (req, socket, head) => {
  socket.on('error', () => {});
  const key = req.headers['sec-websocket-key'] || '';
  if (new URL(req.url, 'http://x').pathname !== '/ws' ||
      String(req.headers.upgrade).toLowerCase() !== 'websocket' ||
      !/^[A-Za-z0-9+/]{22}==$/.test(key)) { // base64 of 16 bytes
    socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  const accept = crypto.createHash('sha1').update(key + GUID).digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
    'Sec-WebSocket-Accept: ' + accept + '\r\n\r\n');

  let buf = Buffer.alloc(0);
  let parts = [], partsOpcode = 0, partsBytes = 0; // a fragmented message so far
  const fail = (code) => { socket.end(frame(0x8, Buffer.from([code >> 8, code & 0xff]))); buf = null; };
  const onData = (chunk) => {
    if (!buf) return; // failed or closed: ignore the rest
    buf = Buffer.concat([buf, chunk]);
    while (buf && buf.length >= 2) {
      const fin = (buf[0] & 0x80) !== 0, opcode = buf[0] & 0x0f, masked = (buf[1] & 0x80) !== 0;
      let len = buf[1] & 0x7f, off = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2); off = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        const big = buf.readBigUInt64BE(2);
        if (big > BigInt(MAX_MESSAGE)) return fail(1009); // too big
        len = Number(big); off = 10;
      }
      if (!masked) return fail(1002); // clients must mask every frame
      if (opcode >= 0x8 && (!fin || len > 125)) return fail(1002); // control frames: whole, small
      if (buf.length < off + 4 + len) return; // wait for the rest of the frame
      const mask = buf.subarray(off, off + 4);
      const payload = Buffer.from(buf.subarray(off + 4, off + 4 + len));
      for (let i = 0; i < len; i++) payload[i] ^= mask[i & 3];
      buf = buf.subarray(off + 4 + len);

      if (opcode === 0x1 || opcode === 0x2 || opcode === 0x0) { // text, binary, continuation
        if ((opcode === 0x0) !== (parts.length > 0)) return fail(1002);
        if (opcode !== 0x0) partsOpcode = opcode;
        parts.push(payload);
        partsBytes += len;
        if (partsBytes > MAX_MESSAGE) return fail(1009);
        if (fin) {
          socket.write(frame(partsOpcode, Buffer.concat(parts))); // the echo
          parts = []; partsBytes = 0;
        }
      } else if (opcode === 0x8) { // close: answer with the same status code, then hang up
        socket.end(frame(0x8, payload.subarray(0, 2)));
        buf = null;
      } else if (opcode === 0x9) {
        socket.write(frame(0xA, payload)); // pong
      } else if (opcode !== 0xA) { // a pong needs no answer; anything else is unknown
        return fail(1002);
      }
    }
  };
  socket.on('data', onData);
  if (head.length) onData(head);
});

// As a container's PID 1, node would ignore SIGTERM (no default action there): stop on it.
process.on('SIGTERM', () => process.exit(0));

server.listen(port, '127.0.0.1', () => {
  console.log('listening on 127.0.0.1:' + server.address().port);
});
`;

// The plot the session makes with matplotlib before serving it: 4x3 inches at 100 dpi, so the
// page should report "loaded 400x300".
export const PLOT_SIZE = { width: 400, height: 300 };
export function plotPython(pngPath) {
  return [
    'import matplotlib',
    "matplotlib.use('Agg')",
    'import matplotlib.pyplot as plt',
    'fig, ax = plt.subplots(figsize=(4, 3), dpi=100)',
    'ax.plot([0, 1, 2, 3], [1, 3, 2, 4])',
    `fig.savefig(${JSON.stringify(pngPath)})`,
    'plt.close(fig)',
  ].join('\n');
}

// Waits until the page at `page` (puppeteer) has filled all three statuses, then returns them:
// { plot: 'loaded 400x300', ws: 'echo: ping-...', sse: 'tick 1', events: <count so far> }.
// A status that reports a failure ('error', 'closed <code>') fails at once instead of waiting.
export async function previewStatuses(page, timeout = 15_000) {
  const read = () => page.evaluate(() => {
    const text = (id) => document.getElementById(id)?.textContent ?? '';
    return {
      plot: text('plot-status'),
      ws: text('ws-status'),
      sse: text('sse-status'),
      events: Number(document.getElementById('sse-status')?.dataset.events ?? 0),
    };
  });
  try {
    await page.waitForFunction(() => {
      const text = (id) => document.getElementById(id)?.textContent ?? '';
      const plot = text('plot-status'), ws = text('ws-status'), sse = text('sse-status');
      const failed = plot === 'error' || ws.startsWith('closed') || sse === 'error';
      return failed || (plot.startsWith('loaded ') && ws.startsWith('echo: ') && sse !== 'waiting');
    }, { timeout, polling: 50 });
  } catch (err) {
    throw new Error(`the preview page did not finish: ${JSON.stringify(await read())} (${err.message})`);
  }
  const statuses = await read();
  if (!statuses.plot.startsWith('loaded ') || !statuses.ws.startsWith('echo: ') ||
      statuses.sse === 'error') {
    throw new Error(`the preview page reports a failure: ${JSON.stringify(statuses)}`);
  }
  return statuses;
}
