/**
 * The embedded database (PGlite) belongs to one process. While a server holds it, the CLI's
 * operator commands (accounts, tokens, migrate) go to that server through a local socket in the
 * data directory instead of being refused: the server runs them on its own open database with
 * the same code (operator-commands.ts) and sends back what they printed and their exit code.
 *
 * The socket is a Unix domain socket (a named pipe on Windows) created with mode 0600: only the
 * user who runs the server (and root) can connect, the same people who can read the data
 * directory itself. One request per connection: a JSON line {"argv": [...]}; one answer: a JSON
 * line {"code", "stdout": [...], "stderr": [...]}.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Database } from './platform/database.js';
import { isOperatorCommand, parseCommandLine, reportFailure, runOperatorCommand, UsageError } from './operator-commands.js';

const MAX_REQUEST_BYTES = 64 * 1024;
const CLIENT_TIMEOUT_MS = 60_000;

interface Answer {
  code: number;
  stdout: string[];
  stderr: string[];
}

/** Where the server of `dataDir` listens (a short path: Unix socket paths are limited to about 100 bytes). */
export function controlSocketPath(dataDir: string): string {
  const id = createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 16);
  if (process.platform === 'win32') return `\\\\.\\pipe\\waygate-${id}`;
  const inDir = path.join(path.resolve(dataDir), 'waygate.sock');
  return Buffer.byteLength(inDir) < 100 ? inDir : path.join(os.tmpdir(), `waygate-${id}.sock`);
}

/** Serves the CLI's operator commands on `database`; call close() before the database closes. */
export async function startControlSocket(dataDir: string, database: Database, log: Logger, usage: string): Promise<{ close(): Promise<void> }> {
  const file = controlSocketPath(dataDir);
  // The data directory is locked by this process: a socket file left there is a dead server's.
  if (process.platform !== 'win32') fs.rmSync(file, { force: true });
  const server = net.createServer((socket) => {
    let request = '';
    socket.setEncoding('utf8');
    socket.on('error', () => undefined);
    socket.on('data', (chunk: string) => {
      request += chunk;
      if (request.length > MAX_REQUEST_BYTES) return socket.destroy();
      const end = request.indexOf('\n');
      if (end < 0) return;
      socket.removeAllListeners('data');
      void answer(request.slice(0, end)).then((reply) => socket.end(`${JSON.stringify(reply)}\n`));
    });
  });
  const answer = async (line: string): Promise<Answer> => {
    const reply: Answer = { code: 0, stdout: [], stderr: [] };
    const out = { stdout: (text: string) => reply.stdout.push(text), stderr: (text: string) => reply.stderr.push(text) };
    try {
      const { argv } = JSON.parse(line) as { argv: unknown };
      if (!Array.isArray(argv) || !argv.every((arg) => typeof arg === 'string')) throw new UsageError('Malformed request');
      const { command, values } = parseCommandLine(argv);
      if (!isOperatorCommand(command)) throw new UsageError(`"${command}" cannot run through a running server`);
      log.info({ command }, 'operator command from the CLI');
      reply.code = await runOperatorCommand(database, command, values, out);
    } catch (error) {
      reply.code = reportFailure(error, out, usage);
    }
    return reply;
  };
  const previousUmask = process.platform === 'win32' ? undefined : process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(file, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    if (previousUmask !== undefined) process.umask(previousUmask);
  }
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        if (process.platform !== 'win32') fs.rmSync(file, { force: true });
      }),
  };
}

/** Runs `argv` on the server that holds `dataDir`; undefined when no server answers there. */
export async function runThroughServer(dataDir: string, argv: string[]): Promise<Answer | undefined> {
  const file = controlSocketPath(dataDir);
  return new Promise((resolve, reject) => {
    const socket = net.connect(file);
    let data = '';
    let connected = false;
    socket.setEncoding('utf8');
    socket.setTimeout(CLIENT_TIMEOUT_MS, () => socket.destroy(new Error(`The server holding ${dataDir} did not answer within ${CLIENT_TIMEOUT_MS / 1000} s`)));
    socket.on('connect', () => {
      connected = true;
      socket.write(`${JSON.stringify({ argv })}\n`);
    });
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('error', (error) => (connected ? reject(error) : resolve(undefined)));
    socket.on('end', () => {
      try {
        resolve(JSON.parse(data) as Answer);
      } catch {
        reject(new Error(`The server holding ${dataDir} sent a malformed answer`));
      }
    });
  });
}
