/**
 * Servers under test run in a child process, so the load generator (autocannon, in the parent)
 * does not share their event loop. The parent forks this file with the module and export that
 * start the servers; the export receives the JSON input, and returns what the parent needs to know
 * (ports) and how to close. The child closes and exits when told to, or when the parent goes away.
 *
 *   parent: const servers = await startServerProcess<Input, Info>(import.meta.url-based path, 'startX', input)
 *   child:  export async function startX(input: Input): Promise<StartedServers<Info>>
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface StartedServers<Info> {
  info: Info;
  close(): Promise<void>;
}

type ChildMessage<Info> = { type: 'ready'; info: Info } | { type: 'failed'; error: string } | { type: 'closed' };
type ParentMessage = { type: 'stop' };

export interface ServerProcess<Info> {
  info: Info;
  pid: number;
  stop(): Promise<void>;
}

const THIS_FILE = fileURLToPath(import.meta.url);
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** Forks a child that imports `modulePath` and calls `exportName(input)`; resolves once it is listening. */
export async function startServerProcess<Input, Info>(modulePath: string, exportName: string, input: Input): Promise<ServerProcess<Info>> {
  // Inherits the parent's execArgv, so the tsx loader runs TypeScript in the child too.
  const child = fork(THIS_FILE, ['--child', modulePath, exportName], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const info = await new Promise<Info>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`The server process did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    child.on('message', (message: ChildMessage<Info>) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        resolve(message.info);
      } else if (message.type === 'failed') {
        clearTimeout(timer);
        reject(new Error(`The server process failed to start: ${message.error}`));
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`The server process exited before it was ready (code ${code}, signal ${signal})`));
    });
    child.send({ type: 'start', input });
  }).catch(async (error: unknown) => {
    if (child.exitCode === null) child.kill('SIGKILL');
    throw error;
  });

  let stopping: Promise<void> | undefined;
  return {
    info,
    pid: child.pid!,
    stop() {
      stopping ??= (async () => {
        if (child.connected) child.send({ type: 'stop' } satisfies ParentMessage);
        if (!(await waitForExit(child, STOP_TIMEOUT_MS))) {
          child.kill('SIGKILL');
          await waitForExit(child, 5_000);
          throw new Error(`The server process ${child.pid} did not stop within ${STOP_TIMEOUT_MS} ms and was killed`);
        }
      })();
      return stopping;
    },
  };
}

async function runChild(modulePath: string, exportName: string): Promise<void> {
  const send = (message: ChildMessage<unknown>) => {
    if (process.connected) process.send!(message);
  };
  const input = await new Promise<unknown>((resolve) => {
    process.once('message', (message: { type: 'start'; input: unknown }) => resolve(message.input));
  });
  let servers: StartedServers<unknown>;
  try {
    const module = (await import(pathToFileURL(modulePath).href)) as Record<string, unknown>;
    const start = module[exportName];
    if (typeof start !== 'function') throw new Error(`${modulePath} has no export ${exportName}`);
    servers = await (start as (input: unknown) => Promise<StartedServers<unknown>>)(input);
  } catch (error) {
    send({ type: 'failed', error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exit(1);
  }
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    try {
      await servers.close();
      send({ type: 'closed' });
      process.exit(0);
    } catch (error) {
      console.error('Closing the servers failed:', error);
      process.exit(1);
    }
  };
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'stop') void close();
  });
  // The parent died or closed the channel: do not outlive it.
  process.on('disconnect', () => void close());
  send({ type: 'ready', info: servers.info });
}

// Not awaited: the module that starts the servers usually imports this one, and a pending
// top-level await here would make that import wait forever.
if (process.argv[2] === '--child' && process.argv[1] === THIS_FILE) {
  runChild(process.argv[3]!, process.argv[4]!).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
