// sandbox-agent's JavaScript driver: runs code cells in one persistent Node.js context (like a
// notebook). Embedded into the agent at build time and started, on the first JavaScript exec, as
// `node --expose-internals -e <this file>` (internals: Node's own acorn parser and the REPL's
// top-level-await rewriter; the process is the sandbox's, so they grant nothing new).
// Protocol (one JSON object per line), the same as the Python driver's:
//   fd 3, agent -> driver: {"code": str, "max_result_chars": int}
//   fd 4, driver -> agent: first {"ready": true, "version": "18.20.4"}, then one reply per
//         command: {"status": "success" | "error", "exit_code": int, "result": str | null,
//                   "interrupted": bool}
// console.log/console.error write fd 1/2, pipes the agent reads; the driver waits for writes libuv
// queued on a full pipe before it replies, so output is never attributed to the next cell.
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
    const reply = { status: 'error', exit_code: 1, result: null, interrupted: false };
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
    const commands = readline.createInterface({
      input: fs.createReadStream(null, { fd: COMMAND_FD }), crlfDelay: Infinity,
    });
    send({ ready: true, version: process.versions.node });
    for await (const line of commands) {
      let reply;
      try {
        const request = parseJson(line);
        const limit = Number.isInteger(request.max_result_chars) ? request.max_result_chars : 1 << 20;
        reply = await runCell(String(request.code), limit);
        await flushOutput();
      } catch (error) {  // a malformed command: an agent bug, reported, not fatal
        writeSync(2, `sandbox driver: cannot run the command: ${String(error)}\n`);
        reply = { status: 'error', exit_code: 1, result: null, interrupted: false };
      }
      send(reply);
    }
    exitProcess(0);  // the agent went away
  }

  main();
})();
