/**
 * The operator commands of the CLI (migrate, accounts, tokens), run against an open database.
 * The CLI runs them on a database it opens itself; a server on the embedded database runs them
 * for the CLI through its control socket (control-socket.ts), since PGlite serves one process.
 * Output goes through `out`, so both places print exactly the same.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { POSTGRES_BACKUP_ADVICE, writeBackup } from './platform/embedded-backup.js';
import type { Database } from './platform/database.js';
import { runMigrations } from './platform/migrate.js';
import { AccountService } from './directory/accounts.js';
import { MAX_PAGE_SIZE } from './directory/contacts.js';
import { TokenService } from './directory/tokens.js';
import { AppError } from './platform/errors.js';

export const OPERATOR_COMMANDS = ['migrate', 'accounts create', 'accounts set-plan', 'tokens create', 'tokens list', 'tokens revoke', 'backup'] as const;

/** Commands of two words; any other command's further words are its arguments (`restore FILE`). */
const COMMAND_GROUPS = new Set(['accounts', 'tokens', 'doctor']);

export class UsageError extends Error {}

export interface Output {
  stdout(line: string): void;
  stderr(line: string): void;
}

export type CommandValues = Record<string, string | boolean | undefined>;

export const COMMAND_OPTIONS = {
  role: { type: 'string' },
  email: { type: 'string' },
  password: { type: 'string' },
  plan: { type: 'string' },
  name: { type: 'string' },
  scopes: { type: 'string' },
  'expires-at': { type: 'string' },
  id: { type: 'string' },
  out: { type: 'string' },
  'data-dir': { type: 'string' },
  force: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

export function parseCommandLine(argv: string[]): { command: string; values: CommandValues; args: string[] } {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: COMMAND_OPTIONS });
  const [command, ...rest] = positionals;
  if (!command) return { command: '', values, args: [] };
  if (COMMAND_GROUPS.has(command) && rest.length > 0) return { command: `${command} ${rest[0]}`, values, args: rest.slice(1) };
  return { command, values, args: rest };
}

export function isOperatorCommand(command: string): boolean {
  return (OPERATOR_COMMANDS as readonly string[]).includes(command);
}

function need(values: CommandValues, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

async function accountIdFor(database: Database, email: string): Promise<string> {
  const accountId = await new AccountService(database).findAccountIdByEmail(email);
  if (!accountId) throw new AppError('NOT_FOUND', `No account has a user with email ${email}`);
  return accountId;
}

/** Runs one operator command; returns the exit code. Throws UsageError or AppError for the caller to report. */
export async function runOperatorCommand(database: Database, command: string, values: CommandValues, out: Output): Promise<number> {
  switch (command) {
    case 'migrate':
      await runMigrations(database);
      out.stdout('Migrations applied.');
      return 0;
    case 'accounts create': {
      const created = await new AccountService(database).createAccount({
        email: need(values, 'email'),
        password: need(values, 'password'),
        plan: values.plan as string | undefined,
        name: values.name as string | undefined,
      });
      out.stdout(`Created account ${created.accountId} (plan ${created.planId}) with user ${created.email}`);
      return 0;
    }
    case 'accounts set-plan': {
      const accountId = await accountIdFor(database, need(values, 'email'));
      const plan = need(values, 'plan');
      await new AccountService(database).setPlan(accountId, plan);
      out.stdout(`Account ${accountId} is now on plan ${plan}`);
      return 0;
    }
    case 'tokens create': {
      const accountId = await accountIdFor(database, need(values, 'email'));
      const scopes = (values.scopes as string | undefined)?.split(',').map((scope) => scope.trim()).filter(Boolean);
      const expiresRaw = values['expires-at'] as string | undefined;
      const expiresAt = expiresRaw ? new Date(expiresRaw) : undefined;
      if (expiresAt && Number.isNaN(expiresAt.getTime())) throw new UsageError('--expires-at must be an ISO 8601 date-time');
      const { token, record } = await new TokenService(database).create(accountId, { name: need(values, 'name'), scopes, expiresAt });
      out.stdout(token);
      out.stderr(`Token ${record.id} created; it is shown only now. Scopes: ${record.scopes.join(', ')}`);
      return 0;
    }
    case 'tokens list': {
      const accountId = await accountIdFor(database, need(values, 'email'));
      const service = new TokenService(database);
      const tokens = [];
      for (let page = 1; ; page++) {
        const { data, meta } = await service.list(accountId, { page, limit: MAX_PAGE_SIZE });
        tokens.push(...data);
        if (page * meta.limit >= meta.total || data.length === 0) break;
      }
      for (const t of tokens) {
        const state = t.revokedAt ? 'revoked' : t.expiresAt && t.expiresAt <= new Date() ? 'expired' : 'active';
        out.stdout([t.id, `${t.prefix}…${t.last4}`, state, JSON.stringify(t.name), t.createdAt.toISOString(), t.lastUsedAt?.toISOString() ?? 'never used'].join('\t'));
      }
      if (tokens.length === 0) out.stderr('No tokens.');
      return 0;
    }
    case 'backup': {
      const file = path.resolve(need(values, 'out'));
      if (database.kind !== 'pglite') throw new AppError('VALIDATION_ERROR', `waygate backup copies the embedded database only. ${POSTGRES_BACKUP_ADVICE}`);
      const written = await writeBackup(database, file);
      out.stdout(`Backup written to ${file}: ${(written.bytes / 1_048_576).toFixed(1)} MB, ${written.accounts} accounts, ${written.messages} messages, ${written.migrations} migrations applied.`);
      return 0;
    }
    case 'tokens revoke': {
      const record = await new TokenService(database).revokeById(need(values, 'id'));
      out.stdout(`Token ${record.id} revoked at ${record.revokedAt?.toISOString()}`);
      return 0;
    }
    default:
      throw new UsageError(`Unknown command "${command}"`);
  }
}

/** How a failed command is told to the operator; returns the exit code. The CLI and the control socket both use it. */
export function reportFailure(error: unknown, out: Output, usage: string): number {
  if (error instanceof UsageError) {
    out.stderr(`${error.message}\n\n${usage}`);
    return 2;
  }
  if (error instanceof AppError) out.stderr(`${error.code}: ${error.message}`);
  else if (error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    out.stderr(`${error.message}\n\n${usage}`);
    return 2;
  } else out.stderr(error instanceof Error ? (error.stack ?? error.message) : String(error));
  return 1;
}
