/**
 * A benchmark account full of contacts, made in one INSERT ... SELECT over generate_series (the
 * product's statement-level triggers keep accounts.contacts_count exact). Rows are a deterministic
 * function of their number, so every seed of the same size holds the same names and numbers:
 * names from the lists in people.ts (about 8% first name only, 12% with a middle initial), unique
 * mobile numbers from several countries, ULID-shaped ids, and creation times spread over three
 * years. A bench account is reused while it is intact, so re-runs skip the seeding.
 */
import { randomBytes } from 'node:crypto';
import type { Database } from '../../src/platform/database.js';
import { AccountService } from '../../src/directory/accounts.js';
import { FIRST_NAMES, LAST_NAMES, NUMBERING_PLANS, PHONE_MULTIPLIER } from './people.js';

/** Bump when the seeding SQL changes, so old bench accounts are replaced. */
const SEED_VERSION = 'v1';
const FIRST_CREATED_AT_MS = Date.UTC(2023, 0, 1);
const CREATED_AT_STEP_MS = 94_608; // a million contacts over three years

export interface SeededAccount {
  accountId: string;
  email: string;
  contacts: number;
  reused: boolean;
  seedSeconds: number;
}

const SEED_SQL = `
INSERT INTO contacts (id, account_id, name, phone_number, created_at, updated_at)
SELECT 'ct_' || ulid.time_part || ulid.random_part, $1, person.name, phone.number, row.created_at, row.created_at
  FROM generate_series(0, $2::int - 1) AS g(i)
 CROSS JOIN LATERAL (
   SELECT $3::bigint + g.i * $4::bigint AS ms,
          timestamptz 'epoch' + ($3::bigint + g.i * $4::bigint) * interval '1 millisecond' AS created_at,
          hashint8extended(g.i, 1) & 9223372036854775807 AS h1,
          hashint8extended(g.i, 2) & 9223372036854775807 AS h2,
          hashint8extended(g.i, 3) & 9223372036854775807 AS h3,
          hashint8extended(g.i, 4) & 1099511627775 AS r1,
          hashint8extended(g.i, 5) & 1099511627775 AS r2,
          ($10::int[])[1 + g.i % array_length($10::int[], 1)] AS plan
 ) AS row
 CROSS JOIN LATERAL (
   SELECT ($5::text[])[1 + row.h1 % array_length($5::text[], 1)] AS first,
          ($6::text[])[1 + row.h2 % array_length($6::text[], 1)] AS last,
          row.h3 % 100 AS shape
 ) AS parts
 CROSS JOIN LATERAL (
   SELECT CASE WHEN parts.shape < 8 THEN parts.first
               WHEN parts.shape < 20 THEN parts.first || ' ' || chr(65 + ((row.h3 / 100) % 26)::int) || '. ' || parts.last
               ELSE parts.first || ' ' || parts.last END AS name
 ) AS person
 CROSS JOIN LATERAL (
   SELECT ($7::text[])[row.plan] ||
          lpad((($8::bigint[])[row.plan] + (g.i::bigint * $11::bigint) % ($9::bigint[])[row.plan])::text, ($12::int[])[row.plan], '0') AS number
 ) AS phone
 CROSS JOIN LATERAL (
   SELECT (SELECT string_agg(substr('0123456789abcdefghjkmnpqrstvwxyz', ((row.ms >> (5 * (9 - k))) & 31)::int + 1, 1), '' ORDER BY k)
             FROM generate_series(0, 9) AS k) AS time_part,
          (SELECT string_agg(substr('0123456789abcdefghjkmnpqrstvwxyz',
                    (((CASE WHEN k < 8 THEN row.r1 ELSE row.r2 END) >> (5 * (7 - k % 8))) & 31)::int + 1, 1), '' ORDER BY k)
             FROM generate_series(0, 15) AS k) AS random_part
 ) AS ulid`;

function seedParameters(accountId: string, contacts: number): unknown[] {
  const slots = NUMBERING_PLANS.flatMap((plan, index) => Array.from({ length: plan.weight }, () => index + 1));
  return [
    accountId,
    contacts,
    FIRST_CREATED_AT_MS,
    CREATED_AT_STEP_MS,
    FIRST_NAMES,
    LAST_NAMES,
    NUMBERING_PLANS.map((plan) => plan.prefix),
    NUMBERING_PLANS.map((plan) => plan.base),
    NUMBERING_PLANS.map((plan) => plan.span),
    slots,
    PHONE_MULTIPLIER,
    NUMBERING_PLANS.map((plan) => plan.bodyDigits),
  ];
}

function accountName(contacts: number): string {
  return `bench:contacts:${SEED_VERSION}:${contacts}`;
}

/** True when the account holds exactly `contacts` contacts and its counter agrees. */
async function isIntact(database: Database, accountId: string, contacts: number): Promise<boolean> {
  const [row] = await database.query<{ name: string; counter: number; actual: number }>(
    `SELECT a.name, a.contacts_count AS counter, (SELECT count(*) FROM contacts c WHERE c.account_id = a.id) AS actual
       FROM accounts a WHERE a.id = $1`,
    [accountId],
  );
  return row !== undefined && row.name === accountName(contacts) && row.counter === contacts && row.actual === contacts;
}

/**
 * Returns the bench account `email` with exactly `contacts` contacts, reusing it when intact,
 * otherwise deleting it and seeding a new one (then VACUUM ANALYZE, as a settled table would be).
 */
export async function ensureContactAccount(database: Database, email: string, contacts: number, log: (line: string) => void): Promise<SeededAccount> {
  const accounts = new AccountService(database);
  const existing = await accounts.findAccountIdByEmail(email);
  if (existing && (await isIntact(database, existing, contacts))) {
    return { accountId: existing, email, contacts, reused: true, seedSeconds: 0 };
  }
  if (existing) {
    log(`The bench account ${existing} is not intact; deleting it.`);
    await database.query('DELETE FROM contacts WHERE account_id = $1', [existing]);
    await database.query('DELETE FROM accounts WHERE id = $1', [existing]);
  }
  const started = Date.now();
  const { accountId } = await accounts.createAccount({
    email,
    password: randomBytes(18).toString('base64url'),
    plan: 'unlimited',
    name: accountName(contacts),
  });
  log(`Seeding ${contacts.toLocaleString('en')} contacts into ${accountId} ...`);
  const client = await database.pool!.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL synchronous_commit = off`);
    await client.query(`SET LOCAL work_mem = '256MB'`);
    await client.query(`SET LOCAL maintenance_work_mem = '512MB'`);
    await client.query(SEED_SQL, seedParameters(accountId, contacts));
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
  log(`Inserted in ${((Date.now() - started) / 1000).toFixed(1)} s; VACUUM ANALYZE ...`);
  await database.query('VACUUM (ANALYZE) contacts');
  await database.query('ANALYZE accounts');
  if (!(await isIntact(database, accountId, contacts))) {
    throw new Error(`Seeding ${accountId} did not leave exactly ${contacts} contacts with a matching contacts_count`);
  }
  return { accountId, email, contacts, reused: false, seedSeconds: Math.round((Date.now() - started) / 100) / 10 };
}
