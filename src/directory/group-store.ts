/**
 * Every statement on groups and group_members. groups.contacts_count is kept exact by triggers on
 * group_members; nothing here writes it. A contact leaves its groups with it (cascade).
 */
import type { Queryable } from '../platform/database.js';
import type { Contact } from './contacts.js';

export interface GroupRow {
  id: string;
  name: string;
  contactsCount: number;
  createdAt: Date;
  updatedAt: Date;
}

const GROUP_COLUMNS = 'id, name, contacts_count AS "contactsCount", created_at AS "createdAt", updated_at AS "updatedAt"';

/** A page of the account's groups, newest first, with the account's total. */
export async function listGroups(db: Queryable, accountId: string, limit: number, offset: number): Promise<{ rows: GroupRow[]; total: number }> {
  const rows = await db.query<GroupRow & { total: number }>(
    `SELECT ${GROUP_COLUMNS}, count(*) OVER () AS total
       FROM groups WHERE account_id = $1 ORDER BY created_at DESC NULLS LAST, id DESC NULLS LAST LIMIT $2 OFFSET $3`,
    [accountId, limit, offset],
  );
  if (rows[0]) return { rows: rows.map(({ total: _total, ...group }) => group), total: Number(rows[0].total) };
  // A page past the end has no row to carry the total.
  const [counted] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM groups WHERE account_id = $1', [accountId]);
  return { rows: [], total: counted?.n ?? 0 };
}

export async function findGroup(db: Queryable, accountId: string, id: string): Promise<GroupRow | undefined> {
  const [row] = await db.query<GroupRow>(`SELECT ${GROUP_COLUMNS} FROM groups WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return row;
}

/** Locks the group row until the transaction ends (member changes of one group queue); whether it exists. */
export async function lockGroup(tx: Queryable, accountId: string, id: string): Promise<boolean> {
  const rows = await tx.query('SELECT id FROM groups WHERE id = $1 AND account_id = $2 FOR UPDATE', [id, accountId]);
  return rows.length > 0;
}

export async function insertGroup(tx: Queryable, row: { id: string; accountId: string; name: string }): Promise<void> {
  await tx.query('INSERT INTO groups (id, account_id, name) VALUES ($1, $2, $3)', [row.id, row.accountId, row.name]);
}

/** Renames the group (updated_at from the database clock, like created_at); whether it exists. */
export async function renameGroup(db: Queryable, accountId: string, id: string, name: string): Promise<boolean> {
  const rows = await db.query('UPDATE groups SET name = $3, updated_at = now() WHERE id = $1 AND account_id = $2 RETURNING id', [id, accountId, name]);
  return rows.length > 0;
}

export async function deleteGroup(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM groups WHERE id = $1 AND account_id = $2 RETURNING id', [id, accountId]);
  return rows.length > 0;
}

/** Adds the contacts to the group, leaving members already in it as they are; how many were added. */
export async function insertMembers(tx: Queryable, groupId: string, contactIds: string[]): Promise<number> {
  const rows = await tx.query(
    'INSERT INTO group_members (group_id, contact_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING RETURNING contact_id',
    [groupId, contactIds],
  );
  return rows.length;
}

export async function deleteMember(db: Queryable, groupId: string, contactId: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM group_members WHERE group_id = $1 AND contact_id = $2 RETURNING contact_id', [groupId, contactId]);
  return rows.length > 0;
}

/** A page of the group's members, most recently added first. */
export async function listMembers(db: Queryable, groupId: string, limit: number, offset: number): Promise<(Contact & { addedAt: Date })[]> {
  return db.query<Contact & { addedAt: Date }>(
    `SELECT c.id, c.name, c.phone_number AS "phoneNumber", c.created_at AS "createdAt", c.updated_at AS "updatedAt", m.added_at AS "addedAt"
       FROM group_members m JOIN contacts c ON c.id = m.contact_id
      WHERE m.group_id = $1 ORDER BY m.added_at DESC NULLS LAST, m.contact_id DESC NULLS LAST LIMIT $2 OFFSET $3`,
    [groupId, limit, offset],
  );
}

/** Which of these contacts are members of the group, most recently added first. */
export async function membersAmong(db: Queryable, groupId: string, contactIds: string[]): Promise<(Contact & { addedAt: Date })[]> {
  return db.query<Contact & { addedAt: Date }>(
    `SELECT c.id, c.name, c.phone_number AS "phoneNumber", c.created_at AS "createdAt", c.updated_at AS "updatedAt", m.added_at AS "addedAt"
       FROM group_members m JOIN contacts c ON c.id = m.contact_id
      WHERE m.group_id = $1 AND m.contact_id = ANY($2::text[]) ORDER BY m.added_at DESC NULLS LAST, m.contact_id DESC NULLS LAST`,
    [groupId, contactIds],
  );
}

