/**
 * The baseline the send benchmarks compare against: a bare Fastify route that INSERTs one row per
 * request (the request body as jsonb) on a pool of the given size, and answers a message-shaped
 * JSON. Whatever Waygate does beyond that one insert is what the ratio measures.
 */
import Fastify from 'fastify';
import pg from 'pg';
import type { StartedServers } from './server-process.js';

export async function startBareRoute(databaseUrl: string, poolSize: number): Promise<{ address: string; close(): Promise<void> }> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize, application_name: 'waygate-bench-bare' });
  pool.on('error', () => undefined);
  await pool.query('CREATE TABLE IF NOT EXISTS bench_bare_messages (id bigserial PRIMARY KEY, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
  const app = Fastify({ logger: false });
  app.post('/messages/send', async (request) => {
    const { rows } = await pool.query<{ id: string; created_at: Date }>('INSERT INTO bench_bare_messages (body) VALUES ($1) RETURNING id, created_at', [
      JSON.stringify(request.body),
    ]);
    return { success: true, message: { id: String(rows[0]!.id), status: 'SENT', sentAt: rows[0]!.created_at }, async: false };
  });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    address,
    async close() {
      await app.close();
      await pool.end();
    },
  };
}

/** The bare route alone in a server process of its own (see server-process.ts). */
export async function startBareServer(input: { databaseUrl: string; poolSize: number }): Promise<StartedServers<{ bare: string }>> {
  const bare = await startBareRoute(input.databaseUrl, input.poolSize);
  return { info: { bare: bare.address }, close: () => bare.close() };
}
