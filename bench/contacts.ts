/**
 * Contacts at a million: one account with 1,000,000 contacts on PostgreSQL.
 *
 *   (a) GET /contacts?search=<3 letters> latency p95, fragments taken from names in the data and
 *       rotated across requests, sent open-loop at 250 requests/s; target p95 <= 25 ms. The same
 *       searches at saturation (closed loop) and one at a time are reported beside it.
 *   (b) GET /contacts (page 1) throughput of Waygate against a bare Fastify route that runs the
 *       same SELECT on its own pool of the same size; target Waygate >= 40% of bare.
 *
 * Before measuring, every fragment's meta.total and first page are checked against an independent
 * query, and Waygate's page 1 against the bare route's, so a fast wrong answer cannot pass.
 */
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Database } from '../src/platform/database.js';
import { unfilteredPageQuery } from '../src/directory/contacts.js';
import { normalizePhone } from '../src/platform/phone.js';
import { TokenService } from '../src/directory/tokens.js';
import { benchDatabaseUrl, openBenchDatabase } from './lib/bench-database.js';
import { ensureContactAccount, type SeededAccount } from './lib/contact-seed.js';
import { runLoad, type LoadResult } from './lib/load.js';
import { runOpenLoop, type OpenLoopResult } from './lib/open-loop.js';
import { allPassed, formatTable, writeResults, type Check } from './lib/report.js';
import { startServerProcess, type StartedServers } from './lib/server-process.js';
import type { BenchmarkOptions, BenchmarkOutcome } from './run.js';

const CONTACTS = 1_000_000;
const ACCOUNT_EMAIL = 'contacts-bench@waygate.test';
const PAGE_SIZE = 50;
const TARGET_SEARCH_P95_MS = 25;
/**
 * The offered load under which search latency is judged: 250 searches a second over 20
 * connections, a third of what one server answers at saturation here and far beyond what people
 * typing into search boxes produce. Latency at saturation is reported beside it: there it only
 * restates throughput (connections ÷ requests per second).
 */
const SEARCH_RATE = 250;
const TARGET_THROUGHPUT_RATIO = 0.4;
/** Offsets (newest first) of the contacts whose names give the search fragments. */
const FRAGMENT_SOURCES = [3, 1_234, 40_000, 123_456, 250_000, 421_337, 500_000, 618_033, 777_777, 999_000];
const FRAGMENT_COUNT = 8;

interface Fragment {
  text: string;
  from: string;
  matches: number;
  firstPageIds: string[];
}

interface ServersInput {
  databaseUrl: string;
  accountId: string;
}

interface ServersInfo {
  waygate: string;
  bare: string;
  poolSize: number;
}

/** Runs in the server process: the real app and, beside it, the bare route. */
export async function startContactsServers(input: ServersInput): Promise<StartedServers<ServersInfo>> {
  const config = loadConfig({
    DATABASE_URL: input.databaseUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '10000000',
  });
  // The product's own pool size (openDatabase's default), as `waygate serve` would open it.
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const poolSize = database.pool!.options.max;
  const app = await buildApp({ config, database });
  const waygate = await app.listen({ host: '127.0.0.1', port: 0 });

  const barePool = new pg.Pool({ connectionString: input.databaseUrl, max: poolSize, application_name: 'waygate-bench-bare' });
  barePool.on('error', () => undefined);
  const bare = Fastify({ logger: false });
  const query = unfilteredPageQuery(input.accountId, PAGE_SIZE);
  bare.get('/contacts', async () => (await barePool.query(query)).rows);
  const bareAddress = await bare.listen({ host: '127.0.0.1', port: 0 });

  return {
    info: { waygate, bare: bareAddress, poolSize },
    async close() {
      // autocannon ends a run by dropping its sockets; requests it abandoned may still be waiting
      // for a pool connection, and would log errors if the pools ended under them.
      await new Promise((resolve) => setTimeout(resolve, 500));
      await Promise.allSettled([app.close(), bare.close()]);
      await Promise.allSettled([database.close(), barePool.end()]);
    },
  };
}

/** Newest first, by an independent query (no index, no trigram): the expected answer of a search. */
async function expectedSearch(database: Database, accountId: string, text: string): Promise<{ matches: number; firstPageIds: string[] }> {
  const where = `account_id = $1 AND (strpos(lower(name), $2) > 0 OR strpos(phone_number, $2) > 0)`;
  const [counted] = await database.query<{ n: number }>(`SELECT count(*)::int AS n FROM contacts WHERE ${where}`, [accountId, text]);
  const ids = await database.query<{ id: string }>(
    `SELECT id FROM contacts WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${PAGE_SIZE}`,
    [accountId, text],
  );
  return { matches: counted?.n ?? 0, firstPageIds: ids.map((row) => row.id) };
}

/** 3-letter pieces of real names: the start of a first or last name, or a piece from inside one. */
async function pickFragments(database: Database, accountId: string): Promise<Fragment[]> {
  const fragments: Fragment[] = [];
  for (const [index, offset] of FRAGMENT_SOURCES.entries()) {
    if (fragments.length === FRAGMENT_COUNT) break;
    const [row] = await database.query<{ name: string }>(
      `SELECT name FROM contacts WHERE account_id = $1 ORDER BY created_at DESC NULLS LAST, id DESC NULLS LAST OFFSET $2 LIMIT 1`,
      [accountId, offset],
    );
    if (!row) continue;
    const words = row.name.toLowerCase().split(/\s+/).filter((word) => /^[a-z]{4,}$/.test(word));
    const word = index % 2 === 0 ? words[0] : words[words.length - 1];
    if (!word) continue;
    const start = index % 4 < 2 ? 0 : Math.floor((word.length - 3) / 2);
    const text = word.slice(start, start + 3);
    if (fragments.some((fragment) => fragment.text === text)) continue;
    fragments.push({ text, from: row.name, ...(await expectedSearch(database, accountId, text)) });
  }
  if (fragments.length < 4) throw new Error(`Only ${fragments.length} search fragments could be taken from the data`);
  return fragments;
}

async function checkPhoneSample(database: Database, accountId: string): Promise<{ sampled: number; invalid: string[] }> {
  const rows = await database.query<{ phone_number: string }>(
    `SELECT phone_number FROM contacts TABLESAMPLE SYSTEM (1) REPEATABLE (42) WHERE account_id = $1 LIMIT 5000`,
    [accountId],
  );
  const invalid = rows.filter((row) => !normalizePhone(row.phone_number).ok).map((row) => row.phone_number);
  return { sampled: rows.length, invalid };
}

interface ContactsPage {
  data: { id: string }[];
  meta: { total: number; page: number; limit: number };
}

async function getJson<T>(url: string, headers: Record<string, string> = {}): Promise<T> {
  const response = await fetch(url, { headers });
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((id, index) => id === b[index]);
}

/** Answers are right before they are fast: every fragment's total and first page, and page 1. */
async function checkAnswers(
  servers: ServersInfo,
  headers: Record<string, string>,
  fragments: readonly Fragment[],
  newestIds: readonly string[],
): Promise<string[]> {
  const problems: string[] = [];
  for (const fragment of fragments) {
    const page = await getJson<ContactsPage>(`${servers.waygate}/contacts?search=${encodeURIComponent(fragment.text)}`, headers);
    if (page.meta.total !== fragment.matches) problems.push(`search "${fragment.text}": meta.total ${page.meta.total}, expected ${fragment.matches}`);
    const ids = page.data.map((contact) => contact.id);
    if (!sameIds(ids, fragment.firstPageIds)) problems.push(`search "${fragment.text}": the first page differs from the expected newest matches`);
  }
  const page = await getJson<ContactsPage>(`${servers.waygate}/contacts`, headers);
  if (page.meta.total !== CONTACTS) problems.push(`GET /contacts: meta.total ${page.meta.total}, expected ${CONTACTS}`);
  if (!sameIds(page.data.map((contact) => contact.id), newestIds)) problems.push('GET /contacts: page 1 is not the newest 50 contacts');
  const bare = await getJson<{ id: string }[]>(`${servers.bare}/contacts`);
  if (!sameIds(bare.map((row) => row.id), newestIds)) problems.push('bare route: its rows are not the newest 50 contacts');
  return problems;
}

const ms = (value: number) => `${value.toFixed(1)} ms`;
const rps = (value: number) => `${Math.round(value).toLocaleString('en')} req/s`;

function failures(result: LoadResult): string | undefined {
  const bad = result.errors + result.timeouts + result.non2xx;
  return bad > 0 ? `${result.title}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx (${JSON.stringify(result.statusCodes)})` : undefined;
}

export async function run(options: BenchmarkOptions): Promise<BenchmarkOutcome> {
  const log = (line: string) => console.log(line);
  const databaseUrl = benchDatabaseUrl();
  const { database, created, name } = await openBenchDatabase(databaseUrl, 4);
  let accountId: string;
  let fragments: Fragment[];
  let newestIds: string[];
  let token: string;
  let seed: SeededAccount;
  let phones: Awaited<ReturnType<typeof checkPhoneSample>>;
  try {
    log(`Database ${name} on ${new URL(databaseUrl).host}${created ? ' (created)' : ''}, migrated.`);
    seed = await ensureContactAccount(database, ACCOUNT_EMAIL, CONTACTS, log);
    accountId = seed.accountId;
    log(
      seed.reused
        ? `Reusing the seeded bench account ${accountId}: ${CONTACTS.toLocaleString('en')} contacts, contacts_count matches.`
        : `Seeded ${CONTACTS.toLocaleString('en')} contacts into ${accountId} in ${seed.seedSeconds} s (contacts_count checked, ANALYZE done).`,
    );
    phones = await checkPhoneSample(database, accountId);
    if (phones.invalid.length > 0) throw new Error(`Seeded phone numbers that are not valid E.164: ${phones.invalid.slice(0, 5).join(', ')}`);

    // A fresh read-only token per run; the previous runs' tokens go.
    await database.query('DELETE FROM api_tokens WHERE account_id = $1', [accountId]);
    token = (await new TokenService(database).create(accountId, { name: 'bench', scopes: ['contacts:read'] })).token;

    fragments = await pickFragments(database, accountId);
    newestIds = (
      await database.query<{ id: string }>(`SELECT id FROM contacts WHERE account_id = $1 ORDER BY created_at DESC, id DESC LIMIT ${PAGE_SIZE}`, [
        accountId,
      ])
    ).map((row) => row.id);
  } finally {
    await database.close();
  }
  log(`Search fragments (rows matched): ${fragments.map((f) => `${f.text} (${f.matches.toLocaleString('en')})`).join(', ')}`);

  const servers = await startServerProcess<ServersInput, ServersInfo>(fileURLToPath(import.meta.url), 'startContactsServers', { databaseUrl, accountId });
  const headers = { 'x-api-key': token };
  const load = { connections: options.connections, durationSeconds: options.durationSeconds, warmupSeconds: options.warmupSeconds };
  let problems: string[];
  let loadBefore: number;
  let search: OpenLoopResult;
  let searchSaturated: LoadResult;
  let searchAlone: LoadResult;
  let waygateList: LoadResult;
  let bareList: LoadResult;
  try {
    log(`Waygate at ${servers.info.waygate}, bare route at ${servers.info.bare}, pool size ${servers.info.poolSize} each.`);
    problems = await checkAnswers(servers.info, headers, fragments, newestIds);
    for (const problem of problems) log(`WRONG ANSWER: ${problem}`);
    const plan = `${options.connections} connections, ${options.warmupSeconds} s warm-up + ${options.durationSeconds} s`;
    const searches = fragments.map((fragment) => ({ path: `/contacts?search=${encodeURIComponent(fragment.text)}` }));
    loadBefore = os.loadavg()[0]!;
    if (loadBefore > os.cpus().length / 2) {
      log(`Note: the machine is busy (load average ${loadBefore.toFixed(2)} on ${os.cpus().length} CPUs); expect pessimistic numbers.`);
    }
    log(`(a) GET /contacts?search=... at ${SEARCH_RATE} requests/s offered (${plan}) ...`);
    search = await runOpenLoop({
      title: 'search',
      origin: servers.info.waygate,
      headers,
      paths: searches.map((s) => s.path),
      rate: SEARCH_RATE,
      connections: options.connections,
      durationSeconds: options.durationSeconds,
      warmupSeconds: options.warmupSeconds,
    });
    log(`(a) the same searches as fast as they are answered (${plan}) ...`);
    searchSaturated = await runLoad({ ...load, title: 'search, saturated', origin: servers.info.waygate, headers, requests: searches });
    log('(a) the same searches one at a time (1 connection, 5 s), for the cost of a request without queueing ...');
    searchAlone = await runLoad({ connections: 1, durationSeconds: 5, warmupSeconds: 1, title: 'search, 1 connection', origin: servers.info.waygate, headers, requests: searches });
    log(`(b) GET /contacts page 1, Waygate (${plan}) ...`);
    waygateList = await runLoad({ ...load, title: 'waygate page 1', origin: servers.info.waygate, headers, requests: [{ path: '/contacts' }] });
    log(`(b) GET /contacts page 1, bare route (${plan}) ...`);
    bareList = await runLoad({ ...load, title: 'bare page 1', origin: servers.info.bare, requests: [{ path: '/contacts' }] });
  } finally {
    await servers.stop();
  }

  const ratio = waygateList.requestsPerSecond / bareList.requestsPerSecond;
  const loadProblems = [searchSaturated, searchAlone, waygateList, bareList].map(failures).filter((problem): problem is string => problem !== undefined);
  const checks: Check[] = [
    { metric: 'answers (totals, order, page 1)', measured: problems.length === 0 ? 'all correct' : `${problems.length} wrong`, target: 'all correct', pass: problems.length === 0 },
    {
      metric: 'requests failed under load',
      measured: String(loadProblems.length === 0 && search.failed === 0 ? 0 : [...loadProblems, `${search.failed} searches failed`].join('; ')),
      target: '0',
      pass: loadProblems.length === 0 && search.failed === 0,
    },
    {
      metric: `search p95 latency, ${SEARCH_RATE} req/s (open loop)`,
      measured: ms(search.latencyMs.p95),
      target: `<= ${TARGET_SEARCH_P95_MS} ms`,
      pass: search.latencyMs.p95 <= TARGET_SEARCH_P95_MS && search.answered === search.sent,
    },
    { metric: `search p50 / p99 latency at ${SEARCH_RATE} req/s`, measured: `${ms(search.latencyMs.p50)} / ${ms(search.latencyMs.p99)} (${search.answered} of ${search.sent} answered)`, target: '', pass: undefined },
    {
      metric: `search at saturation, ${options.connections} connections: throughput, p50 / p95`,
      measured: `${rps(searchSaturated.requestsPerSecond)}, ${ms(searchSaturated.latencyMs.p50)} / ${ms(searchSaturated.latencyMs.p95)}`,
      target: '',
      pass: undefined,
    },
    { metric: 'search p50 / p95, 1 connection', measured: `${ms(searchAlone.latencyMs.p50)} / ${ms(searchAlone.latencyMs.p95)}`, target: '', pass: undefined },
    { metric: 'page 1 throughput, Waygate', measured: rps(waygateList.requestsPerSecond), target: '', pass: undefined },
    { metric: 'page 1 throughput, bare route', measured: rps(bareList.requestsPerSecond), target: '', pass: undefined },
    {
      metric: 'page 1 throughput, Waygate / bare',
      measured: `${(ratio * 100).toFixed(1)}%`,
      target: `>= ${TARGET_THROUGHPUT_RATIO * 100}%`,
      pass: ratio >= TARGET_THROUGHPUT_RATIO,
    },
    { metric: 'page 1 p95 latency, Waygate / bare', measured: `${ms(waygateList.latencyMs.p95)} / ${ms(bareList.latencyMs.p95)}`, target: '', pass: undefined },
  ];
  const table = formatTable(checks);
  console.log(`\n${table}\n`);
  const file = await writeResults('contacts', {
    benchmark: 'contacts',
    finishedAt: new Date().toISOString(),
    passed: allPassed(checks),
    environment: {
      node: process.version,
      platform: `${os.platform()} ${os.arch()}`,
      cpus: os.cpus().length,
      loadAverageBefore: Math.round(loadBefore * 100) / 100,
      loadAverageAfter: Math.round(os.loadavg()[0]! * 100) / 100,
      database: name,
    },
    setup: {
      contacts: CONTACTS,
      accountId,
      seed: { reused: seed.reused, seconds: seed.seedSeconds },
      phoneSample: phones,
      connections: options.connections,
      warmupSeconds: options.warmupSeconds,
      durationSeconds: options.durationSeconds,
      poolSize: servers.info.poolSize,
      pageSize: PAGE_SIZE,
    },
    fragments: fragments.map(({ text, from, matches }) => ({ text, from, matches })),
    wrongAnswers: problems,
    results: { search, searchSaturated, searchAlone, waygateList, bareList, throughputRatio: Math.round(ratio * 1000) / 1000 },
    checks,
  });
  log(`Results written to ${file}`);
  return { passed: allPassed(checks) };
}
