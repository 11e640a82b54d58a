/**
 * How much one background statement takes on, by database. On PostgreSQL a statement runs on a
 * connection of its own, so batches are as large as throughput wants. On PGlite every statement
 * runs in turn in the server's own thread: an API request waits for the one already running, so
 * no background statement may run long (each of these takes some tens of milliseconds there).
 */
import type { Database } from './database.js';

export interface WorkBudget {
  /** Messages per dispatch claim and outcome statement. */
  dispatchBatch: number;
  /**
   * Receipts per statement that applies them. On PostgreSQL the statement keeps each message's
   * event payload (about 1 kB) in memory; past work_mem (4 MB by default, about 3,500 receipts)
   * it writes them to a temporary file and reads them back several times.
   */
  receiptBatch: number;
  /**
   * Recipients per fan-out chunk (one insert). A divisor of every earlier size (10,000), so a
   * job fanned out in part before an upgrade still finds each chunk whole or absent.
   */
  fanoutChunk: number;
  /** Rows per retention statement (expired events, attempts), each followed by a pause. */
  pruneBatch: number;
  /** Bytes of media files per retention statement (past its first file): their chunks go in that statement. */
  pruneMediaBytes: number;
}

const BUDGETS: Record<Database['kind'], WorkBudget> = {
  postgres: { dispatchBatch: 1_000, receiptBatch: 2_000, fanoutChunk: 10_000, pruneBatch: 2_000, pruneMediaBytes: 512 * 1024 * 1024 },
  pglite: { dispatchBatch: 200, receiptBatch: 500, fanoutChunk: 2_000, pruneBatch: 200, pruneMediaBytes: 64 * 1024 * 1024 },
};

export function workBudget(database: Pick<Database, 'kind'>): WorkBudget {
  return BUDGETS[database.kind];
}
