/**
 * Request validation: one ajv per kind of input (strict for JSON bodies, coercing for path and
 * query text), and one rule on top of every schema of every route: no string the API takes (path
 * ids, query values, header values, JSON body fields and field names, at any depth) may hold what
 * src/platform/text.ts refuses in any text (control characters other than tab and line breaks,
 * unpaired surrogates), and no number may be infinite. PostgreSQL cannot store such values, so
 * they are a 400 VALIDATION_ERROR naming the field (a path id: 404, no id holds them), never a
 * 500. Ranges of numbers are each schema's own (an integer that reaches a bigint column has a
 * maximum). A text body (a CSV file) is judged row by row by its importer instead.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { unsafeTextProblem } from '../platform/text.js';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** The ajv keyword of the rule's errors (the error handler answers a path id that breaks it with 404). */
export const UNSAFE_TEXT = 'unsafeText';

const pointer = (path: string, key: string | number): string => `${path}/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;

/**
 * The first value in `data` that breaks the rule, as an ajv-style error, or undefined. Walks
 * with an explicit stack, so deeply nested JSON cannot overflow the call stack.
 */
export function findUnsafeValue(data: unknown): ErrorObject | undefined {
  const stack: Array<{ value: unknown; path: string }> = [{ value: data, path: '' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string') {
      const unsafe = unsafeTextProblem(value);
      if (unsafe) return problem(path, UNSAFE_TEXT, unsafe);
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) return problem(path, 'finite', 'must be a finite number');
    } else if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index--) stack.push({ value: value[index], path: pointer(path, index) });
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        const unsafe = unsafeTextProblem(key);
        if (unsafe) return problem(path, UNSAFE_TEXT, `has a field name that ${unsafe}`);
        stack.push({ value: item, path: pointer(path, key) });
      }
    }
  }
  return undefined;
}

function problem(instancePath: string, keyword: string, message: string): ErrorObject {
  return { instancePath, keyword, message, params: {}, schemaPath: '#' };
}

/** What ajv passes as a validator's second argument (not exported by ajv's index). */
type DataValidationCxt = NonNullable<Parameters<ValidateFunction>[1]>;

type Validator = ((data: unknown, context?: DataValidationCxt) => boolean) & Partial<Pick<ValidateFunction, 'errors' | 'schemaEnv'>>;

/**
 * The schema's own validator, then the rule above on what it accepted (after coercion); `respell`
 * (anyCaseLiterals) first rewrites an object's values to the schema's spelling.
 */
function withValueRule(validate: ValidateFunction, respell?: (data: Record<string, unknown>) => void): Validator {
  const wrapped: Validator = (data, context) => {
    if (respell && data !== null && typeof data === 'object') respell(data as Record<string, unknown>);
    if (!validate(data, context)) {
      wrapped.errors = validate.errors ?? null;
      return false;
    }
    // A coerced root value (a query string turned into a number, say) is written to the parent.
    const value = context ? (context.parentData as Record<string | number, unknown>)[context.parentDataProperty] : data;
    const found = findUnsafeValue(value);
    wrapped.errors = found ? [found] : null;
    return found === undefined;
  };
  // Fastify hands ajv validators their parent (so a root value can be coerced) when it sees this.
  wrapped.schemaEnv = validate.schemaEnv;
  return wrapped;
}

/** The string literals a schema allows (an enum, or TypeBox's union of literals), if that is all it allows. */
function literalsOf(schema: { enum?: unknown[]; anyOf?: { const?: unknown }[] }): string[] | undefined {
  const values = schema.enum ?? schema.anyOf?.map((branch) => branch.const);
  return values && values.length > 0 && values.every((value) => typeof value === 'string') ? (values as string[]) : undefined;
}

/**
 * Query values from a fixed set (a status, a chat type) match it in any case, as the send body's
 * `type` does: `?status=sent` reads as SENT. Returns the step that rewrites such values to the
 * schema's own spelling before validation, or undefined when the query has no such field.
 */
function anyCaseLiterals(schema: { properties?: Record<string, object> }): ((query: Record<string, unknown>) => void) | undefined {
  const spellings = new Map<string, Map<string, string>>();
  for (const [field, property] of Object.entries(schema.properties ?? {})) {
    const literals = literalsOf(property);
    if (literals) spellings.set(field, new Map(literals.map((literal) => [literal.toLowerCase(), literal])));
  }
  if (spellings.size === 0) return undefined;
  return (query) => {
    for (const [field, byLowerCase] of spellings) {
      const value = query[field];
      if (typeof value === 'string') query[field] = byLowerCase.get(value.toLowerCase()) ?? value;
    }
  };
}

function makeAjv(coerceTypes: boolean | 'array'): Ajv {
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: true, strict: false });
  addFormats(ajv);
  return ajv;
}

/**
 * Bodies are validated strictly (a string is not a number), but for a binary one (an upload's
 * stream); query and path values arrive as text and are coerced to the schema's types. Each
 * validator is compiled on its first use, not when the route is registered: the app has some
 * 300 routes (/, /v1, the dashboard) and compiling them all took most of a start's CPU time; a
 * route's first request pays a few milliseconds instead.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const bodyAjv = makeAjv(false);
  const paramAjv = makeAjv('array');
  return ({ schema, httpPart }) => {
    // A binary body (an upload) is the request's stream itself, read and limited by its route.
    if (httpPart === 'body' && (schema as { format?: unknown }).format === 'binary') return () => true;
    const textBody = httpPart === 'body' && (schema as { type?: unknown }).type === 'string';
    let compiled: Validator | undefined;
    const compile = (): Validator => {
      const validate = (httpPart === 'body' ? bodyAjv : paramAjv).compile(schema as object);
      return textBody ? validate : withValueRule(validate, httpPart === 'querystring' ? anyCaseLiterals(schema as object) : undefined);
    };
    const lazy: Validator = (data, context) => {
      compiled ??= compile();
      const valid = compiled(data, context);
      lazy.errors = compiled.errors ?? null;
      return valid;
    };
    // Fastify hands a validator the request part's parent (so ajv can coerce a root value) when
    // it has a schemaEnv, as every compiled ajv validator does; the real one is not there yet.
    lazy.schemaEnv = {} as ValidateFunction['schemaEnv'];
    return lazy;
  };
}
