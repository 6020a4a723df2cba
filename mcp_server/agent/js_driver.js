// sandbox-agent's JavaScript driver: runs code cells in one persistent Node.js context (like a
// notebook). Embedded into the agent at build time and started, on the first JavaScript exec, as
// `node --expose-internals -e <this file>` (internals: Node's own acorn parser and the REPL's
// top-level-await rewriter; the process is the sandbox's, so they grant nothing new).
// Protocol (one JSON object per line), the same as the Python driver's:
//   fd 3, agent -> driver: {"cell": int, "code": str, "max_result_chars": int}
//   fd 4, driver -> agent: first {"ready": true, "version": "18.20.4"}, then one reply per
//         command, naming its cell: {"cell": int, "status": "success" | "error",
//         "exit_code": int, "result": str | null, "interrupted": bool, "exec_ms": float}
// console.log/console.error write fd 1/2, pipes the agent reads. stdout is block-buffered (one
// write per 64 KiB or per 50 ms, not per console.log: under gVisor a syscall costs 10-50x what it
// does natively) and flushed every 50 ms while a cell waits, before stderr is written and before
// a child process starts, so the streams keep their order. The driver flushes, then waits for
// writes libuv queued on a full pipe, before it replies: output is never attributed to the next
// cell.
// SIGINT interrupts the running cell.
// Node cannot mark fds 3 and 4 close-on-exec, so children of user code inherit them; user code
// can write them anyway: the agent trusts nothing it reads there.
// Everything is inside one function: `node -e` runs this as a script in the global scope, where
// top-level declarations would collide with the user's (`const fs = ...` in a cell).
(() => {
  'use strict';

  const fs = require('fs');
  const readline = require('readline');
  const util = require('util');
  const vm = require('vm');

  const COMMAND_FD = 3;
  const REPLY_FD = 4;
  // User code runs in this realm and may replace globals: keep our own references.
  const stringify = JSON.stringify;
  const parseJson = JSON.parse;
  const writeSync = fs.writeSync;
  const inspect = util.inspect;
  const BufferFrom = Buffer.from;
  const exitProcess = process.exit.bind(process);
  const outputStreams = [process.stdout, process.stderr];
  const now = performance.now.bind(performance);
  const FLUSH_INTERVAL_MS = 50;
  const MAX_BUFFERED_BYTES = 64 * 1024;

  const acorn = optionalInternal('internal/deps/acorn/acorn/dist/acorn');
  const topLevelAwait = optionalInternal('internal/repl/await');

  function optionalInternal(name) {
    try {
      return require(name);
    } catch {
      return null;  // another Node.js build: no notebook rewriting / top-level await
    }
  }

  const state = { running: false, cells: 0, interrupt: null };

  class CellExit {
    constructor(code) {
      this.code = code;
    }
  }

  // stdout's buffer: chunks written since the last flush, and when that was.
  const stdoutBuffer = { chunks: [], bytes: 0, flushedAt: 0, timer: null };
  const writeStdout = process.stdout.write.bind(process.stdout);
  const writeStderr = process.stderr.write.bind(process.stderr);

  function flushStdout() {
    stdoutBuffer.flushedAt = now();
    if (stdoutBuffer.bytes === 0) return;
    const data = stdoutBuffer.chunks.length === 1 ? stdoutBuffer.chunks[0]
                                                 : Buffer.concat(stdoutBuffer.chunks);
    stdoutBuffer.chunks = [];
    stdoutBuffer.bytes = 0;
    writeStdout(data);  // libuv writes it now, or queues it while the pipe is full
  }

  function asBuffer(chunk, encoding) {
    if (typeof chunk === 'string') return BufferFrom(chunk, typeof encoding === 'string' ? encoding : 'utf8');
    if (chunk instanceof Uint8Array) return BufferFrom(chunk);  // a copy: the caller may reuse it
    throw new TypeError('The "chunk" argument must be of type string or an instance of Buffer or Uint8Array');
  }

  function callbackOf(encoding, callback) {
    return typeof encoding === 'function' ? encoding : callback;
  }

  // A synchronous loop never lets the 50 ms timer run: each write checks the time itself.
  function bufferedStdoutWrite(chunk, encoding, callback) {
    const data = asBuffer(chunk, encoding);
    stdoutBuffer.chunks.push(data);
    stdoutBuffer.bytes += data.length;
    if (stdoutBuffer.bytes >= MAX_BUFFERED_BYTES || now() - stdoutBuffer.flushedAt >= FLUSH_INTERVAL_MS) {
      flushStdout();
    }
    const done = callbackOf(encoding, callback);
    if (typeof done === 'function') process.nextTick(done);
    return true;
  }

  function stderrWrite(chunk, encoding, callback) {
    flushStdout();
    return writeStderr(chunk, encoding, callback);
  }

  function bufferOutput() {
    // Blocking pipes, as Python's are: a flush has reached the pipe when it returns, so what
    // stderr or a child writes next cannot overtake it (libuv would queue the rest of a write to
    // a full non-blocking pipe and send it later).
    for (const stream of outputStreams) stream._handle?.setBlocking?.(true);
    process.stdout.write = bufferedStdoutWrite;
    process.stderr.write = stderrWrite;
    // Children that inherit fd 1 write it directly: what was printed before them goes first.
    const childProcess = require('child_process');
    for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) {
      const original = childProcess[name];
      childProcess[name] = function (...args) {
        flushStdout();
        return original.apply(this, args);
      };
    }
  }

  // While a cell waits (timers, promises), the event loop flushes on this interval.
  function startFlushing() {
    stdoutBuffer.flushedAt = now();
    stdoutBuffer.timer = setInterval(flushStdout, FLUSH_INTERVAL_MS);
  }

  function stopFlushing() {
    clearInterval(stdoutBuffer.timer);
    stdoutBuffer.timer = null;
    flushStdout();
  }

  function send(message) {
    const data = BufferFrom(stringify(message) + '\n');
    let offset = 0;
    while (offset < data.length) offset += writeSync(REPLY_FD, data, offset);
  }

  // Top-level `let`/`const` become `var` and `class C` becomes `var C = class C`, so a cell that
  // declares a name can run again (as in a notebook) and its names persist into later cells.
  function notebookSource(code) {
    if (!acorn) return code;
    let program;
    try {
      program = acorn.parse(code, {
        ecmaVersion: 'latest', sourceType: 'script', allowAwaitOutsideFunction: true,
        allowHashBang: true,
      });
    } catch {
      return code;  // V8 reports the syntax error with its own message
    }
    const edits = [];
    for (const node of program.body) {
      if (node.type === 'VariableDeclaration' && node.kind !== 'var') {
        edits.push([node.start, node.start + node.kind.length, 'var']);
      } else if (node.type === 'ClassDeclaration' && node.id) {
        edits.push([node.start, node.start, `var ${node.id.name} = `]);
        edits.push([node.end, node.end, ';']);
      }
    }
    let out = code;
    for (const [start, end, text] of edits.reverse()) out = out.slice(0, start) + text + out.slice(end);
    return out;
  }

  // Writes to a pipe that is full are queued by libuv: wait until they reach the pipe, so that a
  // cell's output is all read before its reply.
  async function flushOutput() {
    flushStdout();
    for (const stream of outputStreams) {
      if (stream.writableLength > 0) await new Promise((resolve) => stream.once('drain', resolve));
    }
  }

  function shorten(text, limit) {
    if (text.length <= limit) return text;
    return `${text.slice(0, limit)}... [result truncated: ${text.length} characters in total]`;
  }

  // The error as Node prints it, minus the driver's and Node's own frames.
  function describeError(error) {
    if (error instanceof Error && typeof error.stack === 'string') {
      return error.stack.split('\n')
        .filter((line) => !/^\s+at .*(\(node:|\[eval\]|node:internal|node:vm)/.test(line))
        .join('\n');
    }
    return `Uncaught ${inspect(error)}`;
  }

  function printError(error) {
    try {
      process.stderr.write(describeError(error) + '\n');
    } catch {
      flushStdout();
      writeSync(2, 'Uncaught exception (cannot be printed)\n');
    }
  }

  function isInterrupt(error) {
    return error !== null && typeof error === 'object' &&
           error.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
  }

  // Waits for a top-level-await cell; SIGINT abandons the wait (the context is kept).
  function awaitInterruptibly(promise) {
    return new Promise((resolve, reject) => {
      state.interrupt = () => {
        const error = new Error('Script execution interrupted.');
        error.code = 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
        reject(error);
      };
      Promise.resolve(promise).then(resolve, reject);
    });
  }

  async function runCell(code, maxResultChars) {
    const reply = { status: 'error', exit_code: 1, result: null, interrupted: false, exec_ms: 0 };
    state.cells += 1;
    const filename = `<cell ${state.cells}>`;
    let source = notebookSource(code);
    let wrapped = null;
    if (topLevelAwait) {
      try {
        wrapped = topLevelAwait.processTopLevelAwait(source);
      } catch {
        wrapped = null;
      }
    }
    let script;
    try {
      script = new vm.Script(wrapped ?? source, { filename });
    } catch (error) {
      printError(error);
      return reply;
    }
    state.running = true;
    const started = now();
    try {
      let value = script.runInThisContext({ breakOnSigint: true, displayErrors: false });
      if (wrapped !== null) value = (await awaitInterruptibly(value))?.value;
      if (value !== undefined) reply.result = shorten(inspect(value, { breakLength: 120 }), maxResultChars);
      reply.status = 'success';
      reply.exit_code = 0;
    } catch (error) {
      if (error instanceof CellExit) {
        const status = Number.isInteger(error.code) ? error.code : 0;
        reply.status = status === 0 ? 'success' : 'error';
        reply.exit_code = status;
      } else {
        reply.interrupted = isInterrupt(error);
        printError(error);
      }
    } finally {
      reply.exec_ms = now() - started;
      state.running = false;
      state.interrupt = null;
    }
    return reply;
  }

  function installProcessHooks() {
    process.on('SIGINT', () => {
      if (state.interrupt) state.interrupt();  // between cells: ignored
    });
    // Errors of timers and promises that outlive their cell are printed, never fatal.
    process.on('uncaughtException', (error) => {
      if (!(error instanceof CellExit)) printError(error);
    });
    process.on('unhandledRejection', (reason) => printError(reason));
    // process.exit() ends the cell, like sys.exit() in Python: the context lives on.
    process.exit = (code) => {
      throw new CellExit(code === undefined ? 0 : Number(code));
    };
  }

  async function main() {
    installProcessHooks();
    bufferOutput();
    const commands = readline.createInterface({
      input: fs.createReadStream(null, { fd: COMMAND_FD }), crlfDelay: Infinity,
    });
    send({ ready: true, version: process.versions.node });
    for await (const line of commands) {
      let reply;
      let cell = null;
      try {
        const request = parseJson(line);
        cell = request.cell;
        const limit = Number.isInteger(request.max_result_chars) ? request.max_result_chars : 1 << 20;
        startFlushing();
        try {
          reply = await runCell(String(request.code), limit);
        } finally {
          stopFlushing();
        }
        await flushOutput();
      } catch (error) {  // a malformed command: an agent bug, reported, not fatal
        writeSync(2, `sandbox driver: cannot run the command: ${String(error)}\n`);
        reply = { status: 'error', exit_code: 1, result: null, interrupted: false };
      }
      reply.cell = cell;
      send(reply);
    }
    exitProcess(0);  // the agent went away
  }

  main();
})();
