import Fastify from 'fastify';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { discriminatedUnion, installLazySerializers, lazySerializerCompiler } from '../src/http/serialization.js';

const Direct = Type.Object({ success: Type.Literal(true), count: Type.Integer(), note: Type.Union([Type.String(), Type.Null()]), async: Type.Literal(false) });
const Bulk = Type.Object({ success: Type.Literal(true), jobId: Type.String(), async: Type.Literal(true) });
const Answer = Type.Union([Direct, Bulk]);

/** fast-json-stringify's serializers, as Fastify's own compiler builds them. */
const build = SerializerSelector()({}, {});
const fastJson = (schema: unknown): ((data: unknown) => string) =>
  build({ schema, method: 'GET', url: '/', httpStatus: '202' } as never) as (data: unknown) => string;

/** A 202 of an app with the lazy serializers, `schema` its response schema and `body` what the handler sends. */
async function answering(schema: unknown, body: unknown): Promise<{ statusCode: number; body: string }> {
  const app = Fastify();
  installLazySerializers(app);
  app.get('/', { schema: { response: { 202: schema } } }, async (_request, reply) => reply.status(202).send(body));
  try {
    const response = await app.inject({ method: 'GET', url: '/' });
    return { statusCode: response.statusCode, body: response.body };
  } finally {
    await app.close();
  }
}

describe('response serializers', () => {
  it('tell the branches of a union apart by the property that holds a constant of its own in each', () => {
    const union = discriminatedUnion(Answer);
    expect(union?.key).toBe('async');
    expect([...union!.branches.keys()]).toEqual([false, true]);
    // Not one: a property optional in a branch, the same constant twice, a branch not an object.
    expect(discriminatedUnion(Type.Union([Direct, Type.Object({ async: Type.Optional(Type.Literal(true)) })]))).toBeUndefined();
    expect(discriminatedUnion(Type.Union([Direct, Type.Object({ async: Type.Literal(false), jobId: Type.String() })]))).toBeUndefined();
    expect(discriminatedUnion(Type.Union([Direct, Type.String()]))).toBeUndefined();
    expect(discriminatedUnion(Direct)).toBeUndefined();
  });

  it('write each branch of such a union as fast-json-stringify writes the union', async () => {
    const union = fastJson(Answer);
    const answers = [
      { success: true, count: 2, note: null, async: false, extra: 'dropped' },
      { success: true, count: 3, note: 'n', async: false },
      { success: true, jobId: 'job_1', async: true, count: 7 },
    ];
    for (const body of answers) {
      const { body: written } = await answering(Answer, body);
      expect(written).toBe(union(body));
      expect(JSON.parse(written)).not.toHaveProperty('extra');
    }
  });

  it('compile only the branch an answer names, on its first use, never the whole union', () => {
    const compiled: unknown[] = [];
    const compiler = lazySerializerCompiler((route) => {
      compiled.push(route.schema);
      return build(route);
    });
    const serialize = compiler({ schema: Answer, method: 'POST', url: '/', httpStatus: '202' } as never) as (data: unknown) => string;
    expect(compiled).toEqual([]);
    serialize({ success: true, jobId: 'job_1', async: true });
    serialize({ success: true, jobId: 'job_2', async: true });
    expect(compiled).toEqual([Answer.anyOf[1]]);
    serialize({ success: true, count: 1, note: null, async: false });
    expect(compiled).toEqual([Answer.anyOf[1], Answer.anyOf[0]]);
  });

  it('write an answer whose property names no branch by the union, as before: a 500, as it matches no branch', async () => {
    const body = { success: true, jobId: 'job_1', count: 1, note: null, async: 'neither' };
    expect(() => fastJson(Answer)(body)).toThrow(/does not match schema/);
    const response = await answering(Answer, body);
    expect(response.statusCode).toBe(500);
    expect(response.body).toContain('does not match schema');
  });
});
