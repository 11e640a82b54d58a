/** Groups: named sets of an account's contacts. contactsCount is kept exact by triggers. */
import type { Database, Queryable } from '../platform/database.js';
import { AppError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { GROUP_NAME_MAX } from '../platform/text-limits.js';
import { isPossibleId, MAX_PAGE_SIZE, validateName, type Contact, type Page } from './contacts.js';
import { lockContacts } from './contact-store.js';
import * as store from './group-store.js';

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

export const MAX_CONTACT_IDS = 10_000;

const validateGroupName = (name: string): string => validateName(name, 'name', GROUP_NAME_MAX);

const groupNotFound = (): AppError => new AppError('NOT_FOUND', 'Group not found');

export class GroupService {
  constructor(private readonly database: Database) {}

  async list(accountId: string, options: { page: number; limit: number }): Promise<Page<Group>> {
    const limit = Math.min(options.limit, MAX_PAGE_SIZE);
    const { rows, total } = await store.listGroups(this.database, accountId, limit, (options.page - 1) * limit);
    return { data: rows, meta: { total, page: options.page, limit } };
  }

  async get(accountId: string, id: string): Promise<Group> {
    const row = isPossibleId(id) ? await store.findGroup(this.database, accountId, id) : undefined;
    if (!row) throw groupNotFound();
    return row;
  }

  async create(accountId: string, input: { name: string; contactIds?: string[] | undefined }): Promise<Group> {
    const name = validateGroupName(input.name);
    const id = newId('grp');
    await this.database.transaction(async (tx) => {
      await store.insertGroup(tx, { id, accountId, name });
      if (input.contactIds && input.contactIds.length > 0) await this.insertMembers(tx, accountId, id, input.contactIds);
    });
    return this.get(accountId, id);
  }

  async rename(accountId: string, id: string, input: { name: string }): Promise<Group> {
    if (!isPossibleId(id)) throw groupNotFound();
    if (!(await store.renameGroup(this.database, accountId, id, validateGroupName(input.name)))) throw groupNotFound();
    return this.get(accountId, id);
  }

  async remove(accountId: string, id: string): Promise<void> {
    if (!isPossibleId(id) || !(await store.deleteGroup(this.database, accountId, id))) throw groupNotFound();
  }

  /** Adds contacts; ones already in the group are left as they are. Returns how many were added. */
  async addMembers(accountId: string, groupId: string, contactIds: string[]): Promise<{ added: number; group: Group }> {
    if (!isPossibleId(groupId)) throw groupNotFound();
    const added = await this.database.transaction(async (tx) => {
      if (!(await store.lockGroup(tx, accountId, groupId))) throw groupNotFound();
      return this.insertMembers(tx, accountId, groupId, contactIds);
    });
    return { added, group: await this.get(accountId, groupId) };
  }

  async removeMember(accountId: string, groupId: string, contactId: string): Promise<Group> {
    await this.get(accountId, groupId);
    if (!isPossibleId(contactId) || !(await store.deleteMember(this.database, groupId, contactId))) {
      throw new AppError('NOT_FOUND', 'Contact is not a member of this group');
    }
    return this.get(accountId, groupId);
  }

  /** A page of the members; with `among`, only those of these contacts that are members (all on one page). */
  async members(accountId: string, groupId: string, options: { page: number; limit: number; among?: string[] | undefined }): Promise<Page<GroupMember>> {
    const group = await this.get(accountId, groupId);
    if (options.among !== undefined) {
      if (options.among.length > MAX_PAGE_SIZE) {
        throw new AppError('VALIDATION_ERROR', `At most ${MAX_PAGE_SIZE} contactIds`, [{ field: 'contactIds', message: `must name at most ${MAX_PAGE_SIZE} contacts` }]);
      }
      const data = await store.membersAmong(this.database, groupId, options.among);
      return { data, meta: { total: data.length, page: 1, limit: MAX_PAGE_SIZE } };
    }
    const limit = Math.min(options.limit, MAX_PAGE_SIZE);
    const data = await store.listMembers(this.database, groupId, limit, (options.page - 1) * limit);
    return { data, meta: { total: group.contactsCount, page: options.page, limit } };
  }

  /** Every id must be a contact of this account; unknown ones (or another account's) are a 400 naming them. */
  private async insertMembers(tx: Queryable, accountId: string, groupId: string, contactIds: string[]): Promise<number> {
    const unique = [...new Set(contactIds)];
    if (unique.length > MAX_CONTACT_IDS) {
      throw new AppError('VALIDATION_ERROR', `At most ${MAX_CONTACT_IDS} contactIds per request`, [
        { field: 'contactIds', message: `must have at most ${MAX_CONTACT_IDS} items` },
      ]);
    }
    // Locked until commit (see lockContacts), so none of them can vanish before the insert.
    const found = await lockContacts(tx, accountId, unique.filter(isPossibleId));
    const missing = unique.filter((id) => !found.has(id));
    if (missing.length > 0) {
      throw new AppError(
        'VALIDATION_ERROR',
        `No such contact: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ` and ${missing.length - 5} more` : ''}`,
        missing.slice(0, 100).map((id) => ({ field: `contactIds[${contactIds.indexOf(id)}]`, message: `no contact ${id} in this account` })),
      );
    }
    return store.insertMembers(tx, groupId, unique);
  }
}
