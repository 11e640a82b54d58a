import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ContactService } from '../../domain/contacts.js';
import { auth } from '../auth.js';
import { errorResponses, FieldErrorSchema, IdParams, PageMeta, PageQuery, SuccessOnly, successData, Timestamp } from '../schemas.js';

export const ContactSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  phoneNumber: Type.String({ description: 'E.164 digits without +' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

const ContactInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    phoneNumber: Type.String({ minLength: 1, maxLength: 40, description: 'E.164; +, spaces, dashes, dots and parentheses are stripped' }),
  },
  { additionalProperties: false },
);

const ImportReportSchema = Type.Object({
  totalRows: Type.Integer(),
  created: Type.Integer(),
  skipped: Type.Array(Type.Object({ line: Type.Integer(), phoneNumber: Type.String(), reason: Type.String() })),
  rejected: Type.Array(Type.Object({ line: Type.Integer(), errors: Type.Array(FieldErrorSchema) })),
});

export const contactRoutes: FastifyPluginAsyncTypebox<{ contacts: ContactService }> = async (app, { contacts }) => {
  app.get(
    '/contacts',
    {
      config: { scope: 'contacts:read' },
      schema: {
        tags: ['contacts'],
        summary: 'List contacts (newest first)',
        description: 'The seed contract shape: `data` and `meta`, no `success`.',
        querystring: Type.Object(
          { ...PageQuery, search: Type.Optional(Type.String({ maxLength: 100, description: 'Case-insensitive substring of the name or of the phone digits' })) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ data: Type.Array(ContactSchema), meta: PageMeta }), ...errorResponses('FORBIDDEN') },
      },
    },
    async (request) => {
      const { page = 1, limit = 50, search } = request.query;
      return contacts.list(auth(request).accountId, { page, limit, search });
    },
  );

  app.post(
    '/contacts',
    {
      config: { scope: 'contacts:write' },
      schema: {
        tags: ['contacts'],
        summary: 'Create a contact',
        body: ContactInput,
        response: { 201: successData(ContactSchema), ...errorResponses('FORBIDDEN', 'CONTACT_EXISTS', 'PAYLOAD_TOO_LARGE') },
      },
    },
    async (request, reply) => {
      const contact = await contacts.create(auth(request).accountId, request.body);
      return reply.status(201).send({ success: true as const, data: contact });
    },
  );

  app.post(
    '/contacts/import',
    {
      config: { scope: 'contacts:write' },
      schema: {
        tags: ['contacts'],
        summary: 'Import contacts from CSV',
        description:
          'Body: `text/csv` with a `name,phoneNumber` header. Valid new rows are inserted in one transaction; ' +
          'the report lists created, skipped duplicates and rejected rows with their line numbers.',
        consumes: ['text/csv'],
        body: Type.String({ description: 'CSV text' }),
        response: { 200: successData(ImportReportSchema), ...errorResponses('FORBIDDEN', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE') },
      },
    },
    async (request) => ({ success: true as const, data: await contacts.importCsv(auth(request).accountId, request.body) }),
  );

  app.get(
    '/contacts/:id',
    {
      config: { scope: 'contacts:read' },
      schema: { tags: ['contacts'], summary: 'Read a contact', params: IdParams, response: { 200: successData(ContactSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') } },
    },
    async (request) => ({ success: true as const, data: await contacts.get(auth(request).accountId, request.params.id) }),
  );

  app.patch(
    '/contacts/:id',
    {
      config: { scope: 'contacts:write' },
      schema: {
        tags: ['contacts'],
        summary: 'Update a contact',
        params: IdParams,
        body: Type.Partial(ContactInput, { additionalProperties: false, minProperties: 1 }),
        response: { 200: successData(ContactSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND', 'CONTACT_EXISTS') },
      },
    },
    async (request) => ({ success: true as const, data: await contacts.update(auth(request).accountId, request.params.id, request.body) }),
  );

  app.delete(
    '/contacts/:id',
    {
      config: { scope: 'contacts:write' },
      schema: {
        tags: ['contacts'],
        summary: 'Delete a contact (and its group memberships)',
        params: IdParams,
        response: { 200: SuccessOnly, ...errorResponses('FORBIDDEN', 'NOT_FOUND') },
      },
    },
    async (request) => {
      await contacts.remove(auth(request).accountId, request.params.id);
      return { success: true as const };
    },
  );
};
