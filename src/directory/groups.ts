/** Groups: named sets of an account's contacts. contactsCount is kept exact by triggers. */
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Database, Db } from '../platform/database.js';
import { contacts, groupMembers, groups } from '../platform/schema.js';
import { AppError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { isPossibleId, MAX_PAGE_SIZE, validateName, type Contact, type Page } from './contacts.js';

export interface Group {
  id: string;
  name: string;
  contactsCount: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface GroupMember extends Contact {
  addedAt: Date;
}

export const MAX_GROUP_NAME = 200;
export const MAX_CONTACT_IDS = 10_000;

const validateGroupName = (name: string): string => validateName(name, 'name', MAX_GROUP_NAME);

const groupNotFound = (): AppError => new AppError('NOT_FOUND', 'Group not found');

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

export class GroupService {
  constructor(private readonly database: Database) {}

  async list(accountId: string, options: { page: number; limit: number }): Promise<Page<Group>> {
    const limit = Math.min(options.limit, MAX_PAGE_SIZE);
    const rows = await this.database.query<{ id: string; name: string; contacts_count: number; created_at: Date; updated_at: Date; total: number }>(
      `SELECT id, name, contacts_count, created_at, updated_at, count(*) OVER () AS total
         FROM groups WHERE account_id = $1 ORDER BY created_at DESC NULLS LAST, id DESC NULLS LAST LIMIT $2 OFFSET $3`,
      [accountId, limit, (options.page - 1) * limit],
    );
    let total = rows[0]?.total;
    if (total === undefined) {
      const [counted] = await this.database.query<{ n: number }>('SELECT count(*)::int AS n FROM groups WHERE account_id = $1', [accountId]);
      total = counted?.n ?? 0;
    }
    return {
      data: rows.map((r) => ({ id: r.id, name: r.name, contactsCount: r.contacts_count, createdAt: r.created_at, updatedAt: r.updated_at })),
      meta: { total, page: options.page, limit },
    };
  }

  async get(accountId: string, id: string): Promise<Group> {
    if (!isPossibleId(id)) throw groupNotFound();
    const [row] = await this.database.db
      .select({ id: groups.id, name: groups.name, contactsCount: groups.contactsCount, createdAt: groups.createdAt, updatedAt: groups.updatedAt })
      .from(groups)
      .where(and(eq(groups.id, id), eq(groups.accountId, accountId)));
    if (!row) throw groupNotFound();
    return row;
  }

  async create(accountId: string, input: { name: string; contactIds?: string[] | undefined }): Promise<Group> {
    const name = validateGroupName(input.name);
    const id = newId('grp');
    await this.database.db.transaction(async (tx) => {
      await tx.insert(groups).values({ id, accountId, name });
      if (input.contactIds && input.contactIds.length > 0) await this.insertMembers(tx, accountId, id, input.contactIds);
    });
    return this.get(accountId, id);
  }

  async rename(accountId: string, id: string, input: { name: string }): Promise<Group> {
    if (!isPossibleId(id)) throw groupNotFound();
    const updated = await this.database.db
      .update(groups)
      .set({ name: validateGroupName(input.name), updatedAt: sql`now()` })
      .where(and(eq(groups.id, id), eq(groups.accountId, accountId)))
      .returning({ id: groups.id });
    if (updated.length === 0) throw groupNotFound();
    return this.get(accountId, id);
  }

  async remove(accountId: string, id: string): Promise<void> {
    if (!isPossibleId(id)) throw groupNotFound();
    const deleted = await this.database.db
      .delete(groups)
      .where(and(eq(groups.id, id), eq(groups.accountId, accountId)))
      .returning({ id: groups.id });
    if (deleted.length === 0) throw groupNotFound();
  }

  /** Adds contacts; ones already in the group are left as they are. Returns how many were added. */
  async addMembers(accountId: string, groupId: string, contactIds: string[]): Promise<{ added: number; group: Group }> {
    if (!isPossibleId(groupId)) throw groupNotFound();
    let added = 0;
    await this.database.db.transaction(async (tx) => {
      const [group] = await tx
        .select({ id: groups.id })
        .from(groups)
        .where(and(eq(groups.id, groupId), eq(groups.accountId, accountId)))
        .for('update');
      if (!group) throw groupNotFound();
      added = await this.insertMembers(tx, accountId, groupId, contactIds);
    });
    return { added, group: await this.get(accountId, groupId) };
  }

  async removeMember(accountId: string, groupId: string, contactId: string): Promise<Group> {
    await this.get(accountId, groupId);
    if (!isPossibleId(contactId)) throw new AppError('NOT_FOUND', 'Contact is not a member of this group');
    const deleted = await this.database.db
      .delete(groupMembers)
      .where(and(eq(groupMembers.groupId, groupId), eq(groupMembers.contactId, contactId)))
      .returning({ contactId: groupMembers.contactId });
    if (deleted.length === 0) throw new AppError('NOT_FOUND', 'Contact is not a member of this group');
    return this.get(accountId, groupId);
  }

  async members(accountId: string, groupId: string, options: { page: number; limit: number }): Promise<Page<GroupMember>> {
    const group = await this.get(accountId, groupId);
    const limit = Math.min(options.limit, MAX_PAGE_SIZE);
    const rows = await this.database.query<{ id: string; name: string; phone_number: string; created_at: Date; updated_at: Date; added_at: Date }>(
      `SELECT c.id, c.name, c.phone_number, c.created_at, c.updated_at, m.added_at
         FROM group_members m JOIN contacts c ON c.id = m.contact_id
        WHERE m.group_id = $1 ORDER BY m.added_at DESC NULLS LAST, m.contact_id DESC NULLS LAST LIMIT $2 OFFSET $3`,
      [groupId, limit, (options.page - 1) * limit],
    );
    return {
      data: rows.map((r) => ({ id: r.id, name: r.name, phoneNumber: r.phone_number, createdAt: r.created_at, updatedAt: r.updated_at, addedAt: r.added_at })),
      meta: { total: group.contactsCount, page: options.page, limit },
    };
  }

  /** Every id must be a contact of this account; unknown ones (or another account's) are a 400 naming them. */
  private async insertMembers(tx: Tx, accountId: string, groupId: string, contactIds: string[]): Promise<number> {
    const unique = [...new Set(contactIds)];
    if (unique.length > MAX_CONTACT_IDS) {
      throw new AppError('VALIDATION_ERROR', `At most ${MAX_CONTACT_IDS} contactIds per request`, [
        { field: 'contactIds', message: `must have at most ${MAX_CONTACT_IDS} items` },
      ]);
    }
    const found = await tx
      .select({ id: contacts.id })
      .from(contacts)
      .where(and(eq(contacts.accountId, accountId), inArray(contacts.id, unique.filter(isPossibleId))))
      // Held until commit, so a contact deleted concurrently either waits for this transaction
      // (and then leaves the group through the cascade) or is already gone here and is named as
      // unknown; without it the insert below fails its foreign key check with a 500.
      .for('key share');
    const foundIds = new Set(found.map((row) => row.id));
    const missing = unique.filter((id) => !foundIds.has(id));
    if (missing.length > 0) {
      throw new AppError(
        'VALIDATION_ERROR',
        `No such contact: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ` and ${missing.length - 5} more` : ''}`,
        missing.slice(0, 100).map((id) => ({ field: `contactIds[${contactIds.indexOf(id)}]`, message: `no contact ${id} in this account` })),
      );
    }
    const inserted = await tx
      .insert(groupMembers)
      .values(unique.map((contactId) => ({ groupId, contactId })))
      .onConflictDoNothing()
      .returning({ contactId: groupMembers.contactId });
    return inserted.length;
  }
}
