/**
 * Baileys auth state in the database (table whatsapp_auth) instead of files, so that whichever
 * worker holds a device's lease can restore its session. Modelled on Baileys'
 * useMultiFileAuthState: credentials are one row (category 'creds'), every signal key another
 * (category = key type, key_id = key id); values are JSON written with Baileys' BufferJSON.
 *
 * A store is fenced: once the session that owns it closes (lease lost, shutdown), it stops
 * writing, so a worker that lost a device cannot overwrite what the new owner writes.
 */
import type { Database } from '../../platform/database.js';
import { WhatsAppStore } from './whatsapp-store.js';
import type { AuthState, BaileysHelpers } from './types.js';

const CREDS = 'creds';

export class DatabaseAuthStore {
  private fenced = false;
  /** Writes are applied in the order Baileys made them. */
  private writes: Promise<void> = Promise.resolve();

  private readonly rows: WhatsAppStore;

  constructor(
    database: Database,
    readonly deviceId: string,
    private readonly helpers: BaileysHelpers,
  ) {
    this.rows = new WhatsAppStore(database, deviceId);
  }

  private encode(value: unknown): string {
    return JSON.stringify(value, this.helpers.BufferJSON.replacer);
  }

  private decode(category: string, text: string): unknown {
    const value: unknown = JSON.parse(text, this.helpers.BufferJSON.reviver);
    return category === 'app-state-sync-key' && value ? this.helpers.appStateSyncKeyFromObject(value) : value;
  }

  /** Stored credentials, or undefined when the device has none (never linked, or unlinked). */
  async loadCreds(): Promise<AuthState['creds'] | undefined> {
    const value = await this.rows.authValue(CREDS);
    return value !== undefined ? (this.decode(CREDS, value) as AuthState['creds']) : undefined;
  }

  /** The auth state to hand to Baileys: `creds` is the live object Baileys mutates; keys read and write the database. */
  state(creds: AuthState['creds']): AuthState {
    return {
      creds,
      keys: {
        get: (type, ids) => this.getKeys(type, ids),
        set: (data) => this.setKeys(data),
        clear: () => this.clear(),
      },
    };
  }

  fresh(): AuthState['creds'] {
    return this.helpers.initAuthCreds() as AuthState['creds'];
  }

  async getKeys(type: string, ids: string[]): Promise<Record<string, unknown>> {
    const result: Record<string, unknown> = {};
    if (ids.length === 0) return result;
    const rows = await this.rows.authValues(type, ids);
    for (const row of rows) result[row.key_id] = this.decode(type, row.value);
    return result;
  }

  setKeys(data: Record<string, Record<string, unknown>>): Promise<void> {
    const upsert: { category: string[]; id: string[]; value: string[] } = { category: [], id: [], value: [] };
    const remove: { category: string[]; id: string[] } = { category: [], id: [] };
    for (const [category, entries] of Object.entries(data)) {
      if (category === CREDS) continue;
      for (const [id, value] of Object.entries(entries ?? {})) {
        if (value === null || value === undefined) {
          remove.category.push(category);
          remove.id.push(id);
        } else {
          upsert.category.push(category);
          upsert.id.push(id);
          upsert.value.push(this.encode(value));
        }
      }
    }
    return this.write(async () => {
      if (upsert.id.length === 0 && remove.id.length === 0) return;
      await this.rows.writeAuth(upsert, remove);
    });
  }

  saveCreds(creds: AuthState['creds']): Promise<void> {
    // Serialised now (Baileys keeps mutating the object), written in order.
    const value = this.encode(creds);
    return this.write(async () => {
      await this.rows.saveAuthValue(CREDS, value);
    });
  }

  /** Forgets everything (unlinked): the next link starts from fresh credentials. */
  clear(): Promise<void> {
    return this.write(async () => {
      await this.rows.clearAuth();
    }, true);
  }

  /** Stops writing (the session closed); waits for the writes already made. */
  async fence(): Promise<void> {
    this.fenced = true;
    await this.writes;
  }

  /** Waits for every write made so far. */
  flush(): Promise<void> {
    return this.writes;
  }

  private write(work: () => Promise<void>, evenWhenFenced = false): Promise<void> {
    if (this.fenced && !evenWhenFenced) return Promise.resolve();
    const next = this.writes.then(() => (this.fenced && !evenWhenFenced ? undefined : work()));
    this.writes = next.catch(() => undefined);
    return next;
  }
}
