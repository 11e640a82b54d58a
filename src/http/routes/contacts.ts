import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ContactService } from '../../directory/contacts.js';
import { CONTROL_CHARACTERS_MESSAGE, hasControlCharacters } from '../../platform/text.js';
import { AppError } from '../../platform/errors.js';
import { CONTACT_NAME_MAX } from '../../platform/text-limits.js';
import { auth } from '../auth.js';
import { errorResponses, FieldErrorSchema, IdParams, PageMeta, PageQuery, SuccessOnly, successData, Timestamp, type RouteApp } from '../schemas.js';

/**
 * The shared page/limit query with an upper bound on page: without one, page=1e300 passes as an
 * integer and the offset it implies fails in the database (a 500 instead of a 400).
 */
export const MAX_PAGE = 2_147_483_647;
export const BoundedPageQuery = {
  ...PageQuery,
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1, description: 'Page number, from 1' })),
};

export const ContactSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  phoneNumber: Type.String({ description: 'E.164 digits without +' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
}, { title: 'Contact' });

const ContactInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: CONTACT_NAME_MAX }),
    phoneNumber: Type.String({ minLength: 1, maxLength: 40, description: 'E.164; +, spaces, dashes, dots and parentheses are stripped' }),
  },
  { additionalProperties: false },
);

const IMPORT_MEDIA_TYPES = new Set(['text/csv', 'text/plain']);

const ImportReportSchema = Type.Object({
  totalRows: Type.Integer(),
  created: Type.Integer(),
  skipped: Type.Array(Type.Object({ line: Type.Integer(), phoneNumber: Type.String(), reason: Type.String() })),
  rejected: Type.Array(Type.Object({ line: Type.Integer(), errors: Type.Array(FieldErrorSchema) })),
}, { title: 'ContactImportReport' });

export const contactRoutes: FastifyPluginAsyncTypebox<{ contacts: ContactService }> = async (app, { contacts }) => {
  collectionRoutes(app, contacts);
  importRoutes(app, contacts);
  contactItemRoutes(app, contacts);
};

/** Listing and searching contacts, and creating one. */
function collectionRoutes(app: RouteApp, contacts: ContactService): void {
  app.get(
    '/contacts',
    {
      config: { scope: 'contacts:read' },
      schema: {
        tags: ['contacts'],
        operationId: 'listContacts',
        summary: 'List contacts',
        description: 'Newest first; `search` matches a case-insensitive substring of the name or of the phone digits. The seed contract shape: `data` and `meta`, no `success`.',
        querystring: Type.Object(
          { ...BoundedPageQuery, search: Type.Optional(Type.String({ maxLength: 100, description: 'Case-insensitive substring of the name or of the phone digits' })) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ data: Type.Array(ContactSchema), meta: PageMeta }), ...errorResponses('FORBIDDEN') },
      },
    },
    async (request) => {
      const { page = 1, limit = 50, search } = request.query;
      // A search is one line of a name: no line breaks or tabs either (the rest is refused for every field).
      if (search !== undefined && hasControlCharacters(search)) {
        throw new AppError('VALIDATION_ERROR', `search ${CONTROL_CHARACTERS_MESSAGE}`, [{ field: 'search', message: CONTROL_CHARACTERS_MESSAGE }]);
      }
      return contacts.list(auth(request).accountId, { page, limit, search });
    },
  );

  app.post(
    '/contacts',
    {
      config: { scope: 'contacts:write' },
      schema: {
        tags: ['contacts'],
        operationId: 'createContact',
        summary: 'Create a contact',
        description: 'The phone number is stored as E.164 digits; a number already in the account is 409 CONTACT_EXISTS.',
        body: ContactInput,
        response: { 201: successData(ContactSchema), ...errorResponses('FORBIDDEN', 'CONTACT_EXISTS', 'PAYLOAD_TOO_LARGE') },
      },
    },
    async (request, reply) => {
      const contact = await contacts.create(auth(request).accountId, request.body);
      return reply.status(201).send({ success: true as const, data: contact });
    },
  );
}

/** Importing contacts from CSV. */
function importRoutes(app: RouteApp, contacts: ContactService): void {
  app.post(
    '/contacts/import',
    {
      config: { scope: 'contacts:write' },
      // Other types (JSON included, which would otherwise pass a string schema) are refused
      // before the body is read.
      onRequest: async (request) => {
        const mediaType = (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
        if (!IMPORT_MEDIA_TYPES.has(mediaType)) {
          throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Unsupported Content-Type: ${mediaType || '(none)'}; send the file as text/csv`);
        }
      },
      schema: {
        tags: ['contacts'],
        operationId: 'importContacts',
        summary: 'Import contacts from CSV',
        description:
          'Body: `text/csv` (or `text/plain`) with a header naming the columns `name` and `phoneNumber` (any order, any case; ' +
          'other columns are ignored). RFC 4180 quoting, a UTF-8 BOM and LF, CRLF or CR line endings are accepted; blank rows are skipped. ' +
          'Valid new rows are inserted in one transaction (all or nothing); the report lists created, skipped duplicates ' +
          '(earlier in the file or already in the account) and rejected rows with their errors, each with the line of the file ' +
          'on which its record starts (the header is line 1). Other content types: 415.',
        consumes: ['text/csv', 'text/plain'],
        body: Type.String({ description: 'CSV text' }),
        response: { 200: successData(ImportReportSchema), ...errorResponses('FORBIDDEN', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE') },
      },
    },
    async (request) => ({ success: true as const, data: await contacts.importCsv(auth(request).accountId, request.body) }),
  );
}

/** Reading, changing and deleting one contact. */
function contactItemRoutes(app: RouteApp, contacts: ContactService): void {
  app.get(
    '/contacts/:id',
    {
      config: { scope: 'contacts:read' },
      schema: { tags: ['contacts'], operationId: 'getContact', summary: 'Read a contact', description: 'One contact of the account by id.', params: IdParams, response: { 200: successData(ContactSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') } },
    },
    async (request) => ({ success: true as const, data: await contacts.get(auth(request).accountId, request.params.id) }),
  );

  app.patch(
    '/contacts/:id',
    {
      config: { scope: 'contacts:write' },
      schema: {
        tags: ['contacts'],
        operationId: 'updateContact',
        summary: 'Update a contact',
        description: 'Changes the name, the phone number or both (a number taken by another contact is 409 CONTACT_EXISTS).',
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
        operationId: 'deleteContact',
        summary: 'Delete a contact',
        description: 'Delete a contact (and its group memberships).',
        params: IdParams,
        response: { 200: SuccessOnly, ...errorResponses('FORBIDDEN', 'NOT_FOUND') },
      },
    },
    async (request) => {
      await contacts.remove(auth(request).accountId, request.params.id);
      return { success: true as const };
    },
  );
}
