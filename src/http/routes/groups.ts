import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { GroupService } from '../../directory/groups.js';
import { GROUP_NAME_MAX } from '../../platform/text-limits.js';
import { auth } from '../auth.js';
import { errorResponses, IdString, IdParams, SuccessOnly, successData, successPage, Timestamp, type RouteApp } from '../schemas.js';
import { BoundedPageQuery, ContactSchema } from './contacts.js';

const GroupSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  contactsCount: Type.Integer({ description: 'Exact number of member contacts' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
}, { title: 'Group' });

const MemberSchema = Type.Object({ ...ContactSchema.properties, addedAt: Timestamp }, { title: 'GroupMember' });
const GroupName = Type.String({ minLength: 1, maxLength: GROUP_NAME_MAX });
const ContactIds = Type.Array(IdString(), { maxItems: 10_000 });
const PageOnly = Type.Object(BoundedPageQuery, { additionalProperties: false });
const MembersQuery = Type.Object(
  {
    ...BoundedPageQuery,
    contactIds: Type.Optional(
      Type.String({ maxLength: 3000, description: 'Comma-separated contact ids (up to 100): list only those of them that are members (a page of one), e.g. to offer only non-members' }),
    ),
  },
  { additionalProperties: false },
);
const MemberParams = Type.Object({ id: IdString(), contactId: IdString() });

export const groupRoutes: FastifyPluginAsyncTypebox<{ groups: GroupService }> = async (app, { groups }) => {
  collectionRoutes(app, groups);
  groupItemRoutes(app, groups);
  memberRoutes(app, groups);
};

/** Listing groups and creating one. */
function collectionRoutes(app: RouteApp, groups: GroupService): void {
  app.get(
    '/groups',
    {
      config: { scope: 'groups:read' },
      schema: { tags: ['groups'], operationId: 'listGroups', summary: 'List groups', description: 'Newest first, with the number of members of each.', querystring: PageOnly, response: { 200: successPage(GroupSchema), ...errorResponses('FORBIDDEN') } },
    },
    async (request) => {
      const { page = 1, limit = 50 } = request.query;
      return { success: true as const, ...(await groups.list(auth(request).accountId, { page, limit })) };
    },
  );

  app.post(
    '/groups',
    {
      config: { scope: 'groups:write' },
      schema: {
        tags: ['groups'],
        operationId: 'createGroup',
        summary: 'Create a group',
        description: 'Create a group, optionally with members.',
        body: Type.Object({ name: GroupName, contactIds: Type.Optional(ContactIds) }, { additionalProperties: false }),
        response: { 201: successData(GroupSchema), ...errorResponses('FORBIDDEN') },
      },
    },
    async (request, reply) => reply.status(201).send({ success: true as const, data: await groups.create(auth(request).accountId, request.body) }),
  );
}

/** Reading, renaming and deleting one group. */
function groupItemRoutes(app: RouteApp, groups: GroupService): void {
  app.get(
    '/groups/:id',
    {
      config: { scope: 'groups:read' },
      schema: { tags: ['groups'], operationId: 'getGroup', summary: 'Read a group', description: 'One group of the account by id, with its member count.', params: IdParams, response: { 200: successData(GroupSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') } },
    },
    async (request) => ({ success: true as const, data: await groups.get(auth(request).accountId, request.params.id) }),
  );

  app.patch(
    '/groups/:id',
    {
      config: { scope: 'groups:write' },
      schema: {
        tags: ['groups'],
        operationId: 'renameGroup',
        summary: 'Rename a group',
        description: 'Changes the name of a group; its members stay.',
        params: IdParams,
        body: Type.Object({ name: GroupName }, { additionalProperties: false }),
        response: { 200: successData(GroupSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') },
      },
    },
    async (request) => ({ success: true as const, data: await groups.rename(auth(request).accountId, request.params.id, request.body) }),
  );

  app.delete(
    '/groups/:id',
    {
      config: { scope: 'groups:write' },
      schema: { tags: ['groups'], operationId: 'deleteGroup', summary: 'Delete a group', description: 'Delete a group (its contacts stay).', params: IdParams, response: { 200: SuccessOnly, ...errorResponses('FORBIDDEN', 'NOT_FOUND') } },
    },
    async (request) => {
      await groups.remove(auth(request).accountId, request.params.id);
      return { success: true as const };
    },
  );
}

/** A group's members: listing, adding, removing. */
function memberRoutes(app: RouteApp, groups: GroupService): void {
  app.get(
    '/groups/:id/contacts',
    {
      config: { scope: 'groups:read' },
      schema: {
        tags: ['groups'],
        operationId: 'listGroupContacts',
        summary: 'List the members of a group',
        description: 'List the members of a group (most recently added first).',
        params: IdParams,
        querystring: MembersQuery,
        response: { 200: successPage(MemberSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') },
      },
    },
    async (request) => {
      const { page = 1, limit = 50, contactIds } = request.query;
      const among = contactIds === undefined ? undefined : contactIds.split(',').map((id) => id.trim()).filter(Boolean);
      return { success: true as const, ...(await groups.members(auth(request).accountId, request.params.id, { page, limit, among })) };
    },
  );

  app.post(
    '/groups/:id/contacts',
    {
      config: { scope: 'groups:write' },
      schema: {
        tags: ['groups'],
        operationId: 'addGroupContacts',
        summary: 'Add contacts to a group',
        description: 'Add contacts to a group (ones already in it are left as they are).',
        params: IdParams,
        body: Type.Object({ contactIds: Type.Array(IdString(), { minItems: 1, maxItems: 10_000 }) }, { additionalProperties: false }),
        response: {
          200: successData(Type.Object({ added: Type.Integer(), group: GroupSchema })),
          ...errorResponses('FORBIDDEN', 'NOT_FOUND'),
        },
      },
    },
    async (request) => ({ success: true as const, data: await groups.addMembers(auth(request).accountId, request.params.id, request.body.contactIds) }),
  );

  app.delete(
    '/groups/:id/contacts/:contactId',
    {
      config: { scope: 'groups:write' },
      schema: {
        tags: ['groups'],
        operationId: 'removeGroupContact',
        summary: 'Remove a contact from a group',
        description: 'The contact stays in the account; the answer is the group with its new member count.',
        params: MemberParams,
        response: { 200: successData(GroupSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') },
      },
    },
    async (request) => ({
      success: true as const,
      data: await groups.removeMember(auth(request).accountId, request.params.id, request.params.contactId),
    }),
  );
}
