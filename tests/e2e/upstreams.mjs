// Upstream servers for the MCP sidecar tests, all on 127.0.0.1 with ephemeral ports: the real
// @modelcontextprotocol/server-everything over Streamable HTTP, and small HTTP servers that
// redirect, hang, or stream forever (to watch the sidecar's timeouts and cancellation).
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

// Starts server-everything's Streamable HTTP transport; resolves to { url, child, stop }.
export function startEverything() {
  const entry = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['-r', path.join(here, 'loopback_only.cjs'), entry, 'streamableHttp'],
      { env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    const timer = setTimeout(() => reject(new Error(`server-everything did not start:\n${log}`)), 30000);
    child.stderr.on('data', (chunk) => {
      log += chunk.toString();
      const match = log.match(/LOOPBACK_PORT=(\d+)/);
      if (match && !child.port) {
        clearTimeout(timer);
        child.port = Number(match[1]);
        resolve({
          url: `http://127.0.0.1:${child.port}/mcp`,
          port: child.port,
          child,
          stop: () => new Promise((done) => {
            if (child.exitCode !== null) return done();
            child.on('exit', () => done());
            child.kill('SIGTERM');
          }),
        });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (!child.port) reject(new Error(`server-everything exited with ${code}:\n${log}`));
    });
  });
}

// An HTTP server on 127.0.0.1 running `handler`; resolves to { url(path), port, server, stop }.
export function startHttp(handler) {
  return new Promise((resolve) => {
    const sockets = new Set();
    const server = http.createServer(handler);
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    server.listen({ port: 0, host: '127.0.0.1' }, () => {
      const { port } = server.address();
      resolve({
        port,
        server,
        url: (p = '/mcp') => `http://127.0.0.1:${port}${p}`,
        stop: () => new Promise((done) => {
          for (const socket of sockets) socket.destroy();
          server.close(() => done());
        }),
      });
    });
  });
}

// Answers every request with 302 to `location`.
export function startRedirector(location) {
  return startHttp((req, res) => {
    req.resume();
    res.writeHead(302, { Location: location, 'Content-Length': '0' });
    res.end();
  });
}

// Reads each request and never answers (the sidecar's upstream idle timeout must cut it).
export function startHanging() {
  return startHttp((req) => {
    req.resume();
  });
}

// Answers with an SSE stream: one event at once, then nothing until the client goes away.
// `closed` resolves when a request's connection closes (the sidecar cancelled it).
export async function startEndlessStream() {
  let signalClosed;
  const closed = new Promise((resolve) => (signalClosed = resolve));
  let opened = 0;
  const upstream = await startHttp((req, res) => {
    opened += 1;
    req.resume();
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n');
    res.on('close', () => signalClosed(Date.now()));
  });
  return { ...upstream, closed, opened: () => opened };
}

// A 127.0.0.1 port nothing listens on (bound, then released).
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen({ port: 0, host: '127.0.0.1' }, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}
