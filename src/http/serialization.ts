/**
 * Response serializers (fast-json-stringify, Fastify's own compiler), each compiled on its first
 * use instead of when its route is registered: compiling every response schema of every route
 * was the largest part of a start's CPU time. A route's first answer pays its compilation.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyInstance, FastifySerializerCompiler } from 'fastify';

export function installLazySerializers(app: FastifyInstance): void {
  const build = SerializerSelector()({}, {});
  const compiler: FastifySerializerCompiler<unknown> = (route) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data) => (serialize ??= build(route as Parameters<typeof build>[0]) as (data: unknown) => string)(data);
  };
  app.setSerializerCompiler(compiler);
}
