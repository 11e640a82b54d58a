/**
 * The only code that runs statements on the whatsapp_* tables, for one device: its Baileys auth
 * state (whatsapp_auth), its warm-up, bulk pause and stop (whatsapp_devices), the messages kept
 * for retry requests (whatsapp_sent_messages), its polls' secrets (whatsapp_polls), the number
 * look-ups (whatsapp_numbers) and the LID ↔ phone pairs it learnt (whatsapp_lids). Values arrive and leave encoded: callers own the formats.
 *
 * Invariant: every statement is scoped to the device (device_id = $1), so a worker that takes a
 * device over sees exactly what its previous owner left.
 */
import type { Database, Queryable } from '../../platform/database.js';

export interface WarmupRow {
  first_linked_at: Date | null;
  warmup_day: number;
  warmup_sent: number;
  bulk_paused_until: Date | null;
}

/** Rows of whatsapp_auth keyed by (category, key id); the credentials are key id ''. */
export interface AuthKeys {
  category: string[];
  id: string[];
}

/** The device's network credentials go (removed, or unlinked). */
export async function deleteWhatsAppCredentials(q: Queryable, deviceId: string): Promise<void> {
  await q.query('DELETE FROM whatsapp_auth WHERE device_id = $1', [deviceId]);
}

/** The warm-up rows of these devices (the overview reads them for the whole account at once). */
export async function readWarmupRows(q: Queryable, deviceIds: string[]): Promise<Array<WarmupRow & { device_id: string }>> {
  return q.query('SELECT device_id, first_linked_at, warmup_day, warmup_sent, bulk_paused_until FROM whatsapp_devices WHERE device_id = ANY($1::text[])', [deviceIds]);
}

export class WhatsAppStore {
  constructor(
    private readonly database: Database,
    readonly deviceId: string,
  ) {}

  // ---- whatsapp_auth -----------------------------------------------------------------------

  async authValue(category: string, keyId = ''): Promise<string | undefined> {
    const [row] = await this.database.query<{ value: string }>('SELECT value FROM whatsapp_auth WHERE device_id = $1 AND category = $2 AND key_id = $3', [
      this.deviceId,
      category,
      keyId,
    ]);
    return row?.value;
  }

  async authValues(category: string, ids: string[]): Promise<{ key_id: string; value: string }[]> {
    return this.database.query<{ key_id: string; value: string }>(
      'SELECT key_id, value FROM whatsapp_auth WHERE device_id = $1 AND category = $2 AND key_id = ANY($3::text[])',
      [this.deviceId, category, ids],
    );
  }

  /** Writes and deletes keys in one transaction. */
  async writeAuth(upsert: AuthKeys & { value: string[] }, remove: AuthKeys): Promise<void> {
    await this.database.transaction(async (tx) => {
      if (upsert.id.length > 0) {
        await tx.query(
          `INSERT INTO whatsapp_auth (device_id, category, key_id, value)
           SELECT $1, c, k, v FROM unnest($2::text[], $3::text[], $4::text[]) AS t(c, k, v)
           ON CONFLICT (device_id, category, key_id) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
          [this.deviceId, upsert.category, upsert.id, upsert.value],
        );
      }
      if (remove.id.length > 0) {
        await tx.query(
          `DELETE FROM whatsapp_auth WHERE device_id = $1 AND (category, key_id) IN (SELECT c, k FROM unnest($2::text[], $3::text[]) AS t(c, k))`,
          [this.deviceId, remove.category, remove.id],
        );
      }
    });
  }

  async saveAuthValue(category: string, value: string): Promise<void> {
    await this.database.query(
      `INSERT INTO whatsapp_auth (device_id, category, key_id, value) VALUES ($1, $2, '', $3)
       ON CONFLICT (device_id, category, key_id) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
      [this.deviceId, category, value],
    );
  }

  clearAuth(): Promise<void> {
    return deleteWhatsAppCredentials(this.database, this.deviceId);
  }

  // ---- whatsapp_devices: warm-up, bulk pause, stop -----------------------------------------

  async warmup(): Promise<WarmupRow | undefined> {
    const [row] = await this.database.query<WarmupRow>('SELECT first_linked_at, warmup_day, warmup_sent, bulk_paused_until FROM whatsapp_devices WHERE device_id = $1', [
      this.deviceId,
    ]);
    return row;
  }

  /** A later pause extends the stored one, an earlier one does not shorten it. */
  async pauseBulk(until: Date): Promise<void> {
    await this.database.query(
      `INSERT INTO whatsapp_devices (device_id, bulk_paused_until) VALUES ($1, $2)
       ON CONFLICT (device_id) DO UPDATE SET bulk_paused_until = GREATEST(whatsapp_devices.bulk_paused_until, EXCLUDED.bulk_paused_until), updated_at = now()`,
      [this.deviceId, until],
    );
  }

  /** Linked as `phoneNumber`: a number seen for the first time (or a different one) starts its warm-up again. */
  async linked(phoneNumber: string): Promise<{ first_linked_at: Date; warmup_day: number; warmup_sent: number } | undefined> {
    const [row] = await this.database.query<{ first_linked_at: Date; warmup_day: number; warmup_sent: number }>(
      `INSERT INTO whatsapp_devices (device_id, phone_number, first_linked_at) VALUES ($1, $2, now())
       ON CONFLICT (device_id) DO UPDATE SET
         first_linked_at = CASE WHEN whatsapp_devices.phone_number IS DISTINCT FROM EXCLUDED.phone_number OR whatsapp_devices.first_linked_at IS NULL
                                THEN now() ELSE whatsapp_devices.first_linked_at END,
         warmup_day = CASE WHEN whatsapp_devices.phone_number IS DISTINCT FROM EXCLUDED.phone_number THEN 0 ELSE whatsapp_devices.warmup_day END,
         warmup_sent = CASE WHEN whatsapp_devices.phone_number IS DISTINCT FROM EXCLUDED.phone_number THEN 0 ELSE whatsapp_devices.warmup_sent END,
         phone_number = EXCLUDED.phone_number, updated_at = now()
       RETURNING first_linked_at, warmup_day, warmup_sent`,
      [this.deviceId, phoneNumber],
    );
    return row;
  }

  async saveWarmup(day: number, sent: number): Promise<void> {
    await this.database.query('UPDATE whatsapp_devices SET warmup_day = $2, warmup_sent = $3, updated_at = now() WHERE device_id = $1', [this.deviceId, day, sent]);
  }

  async stop(): Promise<{ stopped_code: string | null; stopped_message: string | null } | undefined> {
    const [row] = await this.database.query<{ stopped_code: string | null; stopped_message: string | null }>(
      'SELECT stopped_code, stopped_message FROM whatsapp_devices WHERE device_id = $1',
      [this.deviceId],
    );
    return row;
  }

  async saveStop(code: string, message: string): Promise<void> {
    await this.database.query(
      `INSERT INTO whatsapp_devices (device_id, stopped_code, stopped_message, stopped_at) VALUES ($1, $2, $3, now())
       ON CONFLICT (device_id) DO UPDATE SET stopped_code = $2, stopped_message = $3, stopped_at = now(), updated_at = now()`,
      [this.deviceId, code, message],
    );
  }

  async clearStop(): Promise<void> {
    await this.database.query('UPDATE whatsapp_devices SET stopped_code = NULL, stopped_message = NULL, stopped_at = NULL, updated_at = now() WHERE device_id = $1', [
      this.deviceId,
    ]);
  }

  /** Unlinked: what was learnt about the link goes (LID pairs, a stop, a bulk pause); the warm-up stays. */
  async forgetLink(): Promise<void> {
    await this.database.query('DELETE FROM whatsapp_lids WHERE device_id = $1', [this.deviceId]);
    await this.database.query(
      'UPDATE whatsapp_devices SET stopped_code = NULL, stopped_message = NULL, stopped_at = NULL, bulk_paused_until = NULL, updated_at = now() WHERE device_id = $1',
      [this.deviceId],
    );
  }

  // ---- whatsapp_sent_messages --------------------------------------------------------------

  /** Drops what is older than `retention` (an SQL interval literal such as '14 days'). */
  async pruneSent(retention: string): Promise<void> {
    await this.database.query(`DELETE FROM whatsapp_sent_messages WHERE device_id = $1 AND sent_at < now() - $2::interval`, [this.deviceId, retention]);
  }

  async keepSent(messageId: string, content: Uint8Array): Promise<void> {
    await this.database.query(
      `INSERT INTO whatsapp_sent_messages (device_id, message_id, content) VALUES ($1, $2, $3)
       ON CONFLICT (device_id, message_id) DO UPDATE SET content = EXCLUDED.content, sent_at = now()`,
      [this.deviceId, messageId, content],
    );
  }

  async sent(messageId: string): Promise<Uint8Array | undefined> {
    const [row] = await this.database.query<{ content: Uint8Array }>('SELECT content FROM whatsapp_sent_messages WHERE device_id = $1 AND message_id = $2', [
      this.deviceId,
      messageId,
    ]);
    return row?.content;
  }

  // ---- whatsapp_polls ----------------------------------------------------------------------

  /**
   * The message secret of the poll `messageId`: the one stored before (a poll handed over again
   * keeps its secret), else `fresh`, stored with the poll's options.
   */
  async pollSecret(messageId: string, fresh: Uint8Array, options: string[]): Promise<Uint8Array> {
    const [row] = await this.database.query<{ secret: Uint8Array }>(
      `INSERT INTO whatsapp_polls (device_id, message_id, secret, options) VALUES ($1, $2, $3, $4::jsonb)
       ON CONFLICT (device_id, message_id) DO UPDATE SET device_id = EXCLUDED.device_id
       RETURNING secret`,
      [this.deviceId, messageId, fresh, JSON.stringify(options)],
    );
    return row!.secret;
  }

  /** A poll the device sent: its secret and options (undefined: not one of the device's polls). */
  async poll(messageId: string): Promise<{ secret: Uint8Array; options: string[] } | undefined> {
    const [row] = await this.database.query<{ secret: Uint8Array; options: string[] }>('SELECT secret, options FROM whatsapp_polls WHERE device_id = $1 AND message_id = $2', [
      this.deviceId,
      messageId,
    ]);
    return row;
  }

  // ---- whatsapp_numbers --------------------------------------------------------------------

  /** A look-up still trusted: answers on WhatsApp for `onNetworkMs`, not on it for `offNetworkMs`. undefined: ask again. */
  async cachedJid(phoneNumber: string, onNetworkMs: number, offNetworkMs: number): Promise<{ jid: string | null } | undefined> {
    const [row] = await this.database.query<{ jid: string | null }>(
      `SELECT jid FROM whatsapp_numbers WHERE device_id = $1 AND phone_number = $2
          AND checked_at > now() - CASE WHEN jid IS NULL THEN $3::int ELSE $4::int END * interval '1 millisecond'`,
      [this.deviceId, phoneNumber, offNetworkMs, onNetworkMs],
    );
    return row;
  }

  async saveJid(phoneNumber: string, jid: string | null): Promise<void> {
    await this.database.query(
      `INSERT INTO whatsapp_numbers (device_id, phone_number, jid) VALUES ($1, $2, $3)
       ON CONFLICT (device_id, phone_number) DO UPDATE SET jid = EXCLUDED.jid, checked_at = now()`,
      [this.deviceId, phoneNumber, jid],
    );
  }

  // ---- whatsapp_lids -----------------------------------------------------------------------

  async saveLid(lid: string, phoneNumber: string): Promise<void> {
    await this.database.query(
      `INSERT INTO whatsapp_lids (device_id, lid, phone_number) VALUES ($1, $2, $3)
       ON CONFLICT (device_id, lid) DO UPDATE SET phone_number = EXCLUDED.phone_number, updated_at = now()`,
      [this.deviceId, lid, phoneNumber],
    );
  }

  async lidPhone(lid: string): Promise<string | undefined> {
    const [row] = await this.database.query<{ phone_number: string }>('SELECT phone_number FROM whatsapp_lids WHERE device_id = $1 AND lid = $2', [this.deviceId, lid]);
    return row?.phone_number;
  }
}
