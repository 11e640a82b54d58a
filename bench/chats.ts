/**
 * Conversations at a million messages, on PostgreSQL: one account, one device, 1,000,000
 * messages in both directions over 20,000 chats (one of them holding a tenth of them) and the
 * chats table those messages make, seeded by set-based SQL and vacuumed and analysed as
 * autovacuum would leave them.
 *
 * Over HTTP to the API process (`serve --role api`, a child process), LATENCY_CONNECTIONS
 * connections in a closed loop, p95 latency (target ≤ 50 ms each) of:
 *   GET /chats                              page 1, and a cursor page 10,000 chats deep
 *   GET /chats/:id/messages                 the busiest chat's newest page, and a page 90% back (before=…)
 * at limit 50, beside GET /account (the floor of an authenticated request on the machine, for
 * information). Before timing, the answers are checked against independent queries of the tables.
 * The database (waygate_bench_chats) is created anew on each run and dropped at the end
 * (lib/api-fixture.ts).
 * BENCH_CHAT_MESSAGES sets the size (default 1,000,000) for a quick run.
 */
import type pg from 'pg';
import { openApiFixture } from './lib/api-fixture.js';
import { runLoad } from './lib/load.js';
import { allPassed, formatTable, writeResults, type Check } from './lib/report.js';
import { api } from './lib/tenant.js';
import type { BenchmarkOptions, BenchmarkOutcome } from './run.js';

const MESSAGES = Number(process.env.BENCH_CHAT_MESSAGES ?? 1_000_000);
const CHATS = Math.max(100, Math.floor(MESSAGES / 50));
const LIMIT = 50;
const TARGET_P95_MS = 50;
const LATENCY_CONNECTIONS = 4;
/** The busiest chat: every tenth message. */
const HOT_PEER = '6281200000009';

/** Messages: every tenth to or from the busiest chat, the rest over the other chats; a third outgoing; four share each millisecond. Then the chats they make. */
async function seed(client: pg.Client, accountId: string, deviceId: string): Promise<void> {
  const step = async (what: string, sql: string, params: unknown[] = []) => {
    const started = Date.now();
    await client.query(sql, params);
    console.log(`  ${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  };
  await step(
    `${MESSAGES.toLocaleString('en')} messages`,
    `INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, attempts, created_at, received_at, sent_at)
     SELECT 'msg_' || lpad(g::text, 26, '0'), $1, $2, CASE WHEN g % 3 = 0 THEN 'out' ELSE 'in' END,
            CASE WHEN g % 10 = 0 THEN $4 ELSE '62813' || lpad((g % ($5 - 1))::text, 8, '0') END, 'TEXT', 'Chat bench message ' || g,
            CASE WHEN g % 3 = 0 THEN 'SENT' ELSE 'RECEIVED' END, 'BENCH' || g, CASE WHEN g % 3 = 0 THEN 1 ELSE 0 END,
            now() - ((($3 - g) / 4) * interval '1 millisecond') - interval '1 day',
            CASE WHEN g % 3 <> 0 THEN now() - ((($3 - g) / 4) * interval '1 millisecond') - interval '1 day' END,
            CASE WHEN g % 3 = 0 THEN now() - ((($3 - g) / 4) * interval '1 millisecond') - interval '1 day' END
       FROM generate_series(1, $3) AS g`,
    [accountId, deviceId, MESSAGES, HOT_PEER, CHATS],
  );
  await step(
    `${CHATS.toLocaleString('en')} chats`,
    `INSERT INTO chats (device_id, id, account_id, type, phone_number, last_message_id, last_activity_at, unread_count)
     SELECT $2, peer, $1, 'direct', peer, max(id), max(created_at), (count(*) FILTER (WHERE direction = 'in') % 7)::int
       FROM messages WHERE device_id = $2 GROUP BY peer`,
    [accountId, deviceId],
  );
  await step('VACUUM ANALYZE', 'VACUUM ANALYZE messages, chats');
}

interface ChatListBody {
  data: { id: string; lastMessage: { id: string } | null }[];
  meta: { nextCursor: string | null };
}
interface HistoryBody {
  data: { id: string }[];
  meta: { nextBefore: string | null };
}

export async function run(options: BenchmarkOptions): Promise<BenchmarkOutcome> {
  const checks: Check[] = [];
  const results: Record<string, unknown> = { messages: MESSAGES, chats: CHATS, limit: LIMIT, connections: LATENCY_CONNECTIONS };
  const fixture = await openApiFixture('waygate_bench_chats', { devices: ['bench phone'] });
  try {
    const { client, origin, accountId, token, deviceIds } = fixture;
    const deviceId = deviceIds[0]!;
    console.log(`Seeding ${MESSAGES.toLocaleString('en')} messages over ${CHATS.toLocaleString('en')} chats …`);
    await seed(client, accountId, deviceId);

    const get = async <T>(path: string): Promise<T> => {
      const answer = await api<T>(origin, token, 'GET', path);
      if (answer.status !== 200) throw new Error(`GET ${path} answered ${answer.status}: ${JSON.stringify(answer.json)}`);
      return answer.json;
    };
    // Correctness: the chat list's first page and a deep cursor page, the busiest chat's newest page and a page 90% back.
    const expectedChats = async (offset: number) =>
      (await client.query<{ id: string }>(`SELECT id FROM chats WHERE account_id = $1 ORDER BY last_activity_at DESC, device_id DESC, id DESC LIMIT ${LIMIT} OFFSET ${offset}`, [accountId])).rows.map((r) => r.id);
    const expectedHistory = async (offset: number) =>
      (await client.query<{ id: string }>(`SELECT id FROM messages WHERE device_id = $1 AND peer = $2 ORDER BY created_at DESC, id DESC LIMIT ${LIMIT} OFFSET ${offset}`, [deviceId, HOT_PEER])).rows.map((r) => r.id);
    const same = (a: string[], b: string[]) => a.length === b.length && a.every((id, i) => id === b[i]);

    const chatPage1 = await get<ChatListBody>(`/chats?limit=${LIMIT}`);
    const deepChats = Math.floor((CHATS * 0.5) / LIMIT) * LIMIT;
    const beforeDeep = await get<ChatListBody>(`/chats?limit=${LIMIT}&page=${deepChats / LIMIT}`);
    const chatCursor = beforeDeep.meta.nextCursor!;
    const chatDeep = await get<ChatListBody>(`/chats?limit=${LIMIT}&cursor=${chatCursor}`);
    const hotMessages = MESSAGES / 10;
    const historyDepth = Math.floor((hotMessages * 0.9) / LIMIT) * LIMIT;
    const [anchor] = (await client.query<{ id: string }>(`SELECT id FROM messages WHERE device_id = $1 AND peer = $2 ORDER BY created_at DESC, id DESC OFFSET ${historyDepth - 1} LIMIT 1`, [deviceId, HOT_PEER])).rows;
    const history1 = await get<HistoryBody>(`/chats/${HOT_PEER}/messages?limit=${LIMIT}`);
    const historyDeep = await get<HistoryBody>(`/chats/${HOT_PEER}/messages?limit=${LIMIT}&before=${anchor!.id}`);
    const correct =
      same(chatPage1.data.map((c) => c.id), await expectedChats(0)) &&
      chatPage1.data.every((c) => c.lastMessage !== null) &&
      same(chatDeep.data.map((c) => c.id), await expectedChats(deepChats)) &&
      same(history1.data.map((m) => m.id), await expectedHistory(0)) &&
      same(historyDeep.data.map((m) => m.id), await expectedHistory(historyDepth));
    checks.push({ metric: 'chat list and history pages match the tables', measured: correct ? 'match' : 'MISMATCH', target: 'match', pass: correct });

    const cases: { label: string; path: string; info?: boolean }[] = [
      { label: 'GET /account', path: '/account', info: true },
      { label: 'GET /chats page 1', path: `/chats?limit=${LIMIT}` },
      { label: `GET /chats cursor page ${deepChats.toLocaleString('en')} chats deep`, path: `/chats?limit=${LIMIT}&cursor=${chatCursor}` },
      { label: `GET /chats/:id/messages newest (chat of ${hotMessages.toLocaleString('en')})`, path: `/chats/${HOT_PEER}/messages?limit=${LIMIT}` },
      { label: `GET /chats/:id/messages ${historyDepth.toLocaleString('en')} back`, path: `/chats/${HOT_PEER}/messages?limit=${LIMIT}&before=${anchor!.id}` },
      { label: 'GET /chats/:id', path: `/chats/${HOT_PEER}` },
    ];
    for (const item of cases) {
      console.log(`${item.label} …`);
      const load = await runLoad({
        title: item.label,
        origin,
        requests: [{ path: item.path }],
        headers: { 'x-api-key': token },
        connections: LATENCY_CONNECTIONS,
        durationSeconds: options.durationSeconds,
        warmupSeconds: options.warmupSeconds,
      });
      results[item.label] = load;
      const clean = load.non2xx === 0 && load.errors === 0 && load.timeouts === 0 && load.responses > 0;
      if (item.info) {
        checks.push({ metric: `${item.label}: p95 (info: the machine's floor for an authenticated request)`, measured: `${load.latencyMs.p95} ms (p50 ${load.latencyMs.p50})`, target: '', pass: undefined });
        continue;
      }
      checks.push({
        metric: `${item.label}: p95`,
        measured: `${load.latencyMs.p95} ms (p50 ${load.latencyMs.p50}, ${load.requestsPerSecond}/s${clean ? '' : `, ${load.non2xx} non-2xx, ${load.errors} errors`})`,
        target: `<= ${TARGET_P95_MS} ms`,
        pass: clean && load.latencyMs.p95 <= TARGET_P95_MS,
      });
    }
  } finally {
    await fixture.close();
  }

  console.log(`\n${formatTable(checks)}\n`);
  const file = await writeResults('chats', { at: new Date().toISOString(), checks, results });
  console.log(`Results written to ${file}`);
  return { passed: allPassed(checks) };
}
