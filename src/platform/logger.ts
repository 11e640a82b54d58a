/**
 * The process's logger: pino writing JSON lines (one object a line, for log collectors), or, for a
 * developer at a terminal, pino-pretty's readable lines. pino-pretty is a devDependency and is
 * loaded only when asked for: a production install (`npm ci --omit=dev`) never needs it.
 */
import { createRequire } from 'node:module';
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { ConfigError, type LogFormat, type LogLevel } from '../config.js';

const require = createRequire(import.meta.url);

type PrettyFactory = (options: { colorize?: boolean; translateTime?: string; ignore?: string; sync?: boolean }) => DestinationStream;

function loadPretty(): PrettyFactory | undefined {
  try {
    return require('pino-pretty') as PrettyFactory;
  } catch {
    return undefined;
  }
}

/**
 * `auto` is pretty when stdout is a terminal and pino-pretty is installed (a development
 * checkout), JSON otherwise; `pretty` without pino-pretty is a configuration error.
 */
export function createLogger(options: { level: LogLevel; format: LogFormat; stream?: DestinationStream | NodeJS.WritableStream; serializers?: LoggerOptions['serializers'] }): Logger {
  const base: LoggerOptions = { level: options.level, ...(options.serializers ? { serializers: options.serializers } : {}) };
  if (options.stream) return pino(base, options.stream as DestinationStream);
  const wantsPretty = options.format === 'pretty' || (options.format === 'auto' && process.stdout.isTTY === true);
  const pretty = wantsPretty ? loadPretty() : undefined;
  if (options.format === 'pretty' && !pretty) {
    throw new ConfigError(['LOG_FORMAT=pretty needs pino-pretty, a development dependency: run `npm install`, or use LOG_FORMAT=json']);
  }
  if (pretty) return pino(base, pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', sync: true }));
  return pino(base);
}
