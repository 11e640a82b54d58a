/**
 * Response serializers (fast-json-stringify, Fastify's own compiler), each compiled on its first
 * use instead of when its route is registered: compiling every response schema of every route
 * was the largest part of a start's CPU time. A route's first answer pays its compilation.
 *
 * A response that is a union of objects told apart by one property, a different constant in each
 * (`async: false` or `true` in POST /messages/send's 202), is written by the serializer of the
 * branch that property names, each compiled on its first use too. fast-json-stringify would
 * compile an ajv validator of every branch (for the send answer's, the whole Message schema) on
 * the union's first answer and run them on every answer to find the branch that matches. An
 * answer whose property names no branch is written by the union's own serializer.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyInstance, FastifySerializerCompiler } from 'fastify';

type Serialize = (data: unknown) => string;
type Route = Parameters<ReturnType<ReturnType<typeof SerializerSelector>>>[0];
type Schema = Record<string, unknown>;

/** A serializer of `route` with `schema`, compiled on its first call. */
function lazy(build: (route: Route) => unknown, route: Route, schema: unknown): Serialize {
  let serialize: Serialize | undefined;
  return (data) => (serialize ??= build({ ...route, schema } as Route) as Serialize)(data);
}

const isObject = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The property that tells `schema`'s branches apart, and each branch by its constant: every branch
 * an object schema that requires the property and gives it a `const` of its own. Undefined for
 * any other schema.
 */
export function discriminatedUnion(schema: unknown): { key: string; branches: Map<unknown, Schema> } | undefined {
  const branches = isObject(schema) && Array.isArray(schema.anyOf) ? (schema.anyOf as unknown[]) : undefined;
  if (!branches || branches.length < 2 || !branches.every((branch) => isObject(branch) && branch.type === 'object' && isObject(branch.properties))) return undefined;
  const objects = branches as (Schema & { properties: Record<string, unknown>; required?: unknown })[];
  for (const key of Object.keys(objects[0]!.properties)) {
    const byConstant = new Map<unknown, Schema>();
    for (const branch of objects) {
      const property = branch.properties[key];
      const required = Array.isArray(branch.required) && branch.required.includes(key);
      if (!required || !isObject(property) || !('const' in property) || byConstant.has(property.const)) break;
      byConstant.set(property.const, branch);
    }
    if (byConstant.size === objects.length) return { key, branches: byConstant };
  }
  return undefined;
}

/** The serializer compiler of installLazySerializers, over `build` (fast-json-stringify's, as Fastify's own compiler sets it up). */
export function lazySerializerCompiler(build: (route: Route) => unknown = SerializerSelector()({}, {})): FastifySerializerCompiler<unknown> {
  return (route) => {
    const whole = lazy(build, route as Route, route.schema);
    const union = discriminatedUnion(route.schema);
    if (!union) return whole;
    const byConstant = new Map([...union.branches].map(([constant, branch]) => [constant, lazy(build, route as Route, branch)]));
    return (data) => (byConstant.get(isObject(data) ? data[union.key] : undefined) ?? whole)(data);
  };
}

export function installLazySerializers(app: FastifyInstance): void {
  app.setSerializerCompiler(lazySerializerCompiler());
}
