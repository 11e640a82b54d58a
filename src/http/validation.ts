/**
 * Request validation: one ajv per kind of input (strict for JSON bodies, coercing for path and
 * query text), and one rule on top of every schema of every route: no string the API takes (path
 * ids, query values, body fields and object keys, at any depth) may hold a control character or
 * an unpaired surrogate, and no number may lie beyond ±(2^53 − 1) or be infinite. Such values
 * cannot be stored or compared faithfully (PostgreSQL refuses NUL in text and lone surrogates in
 * jsonb; bigint ends at 2^63), so they are a 400 VALIDATION_ERROR naming the field, never a 500.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/**
 * C0 controls except tab, line feed and carriage return (text may have lines), DEL, C1 controls,
 * and UTF-16 surrogates without their pair.
 */
// eslint-disable-next-line no-control-regex -- finding control characters is this rule's purpose
const UNSAFE_TEXT = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const UNSAFE_TEXT_MESSAGE = 'must not contain control characters (other than tab and line breaks) or unpaired surrogates';

/** True when a string holds something the API refuses anywhere (see UNSAFE_TEXT). */
export function hasUnsafeText(value: string): boolean {
  return UNSAFE_TEXT.test(value);
}

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
      if (hasUnsafeText(value)) return problem(path, 'unsafeText', UNSAFE_TEXT_MESSAGE);
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value) || Math.abs(value) > Number.MAX_SAFE_INTEGER) {
        return problem(path, 'numberRange', `must be a finite number from -${Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}`);
      }
    } else if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index--) stack.push({ value: value[index], path: pointer(path, index) });
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (hasUnsafeText(key)) return problem(path, 'unsafeText', `has a field name that ${UNSAFE_TEXT_MESSAGE}`);
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

/** The schema's own validator, then the rule above on what it accepted (after coercion). */
function withValueRule(validate: ValidateFunction): Validator {
  const wrapped: Validator = (data, context) => {
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

function makeAjv(coerceTypes: boolean | 'array'): Ajv {
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: true, strict: false });
  addFormats(ajv);
  return ajv;
}

/** Bodies are validated strictly (a string is not a number); query and path values arrive as text and are coerced to the schema's types. */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const bodyAjv = makeAjv(false);
  const paramAjv = makeAjv('array');
  return ({ schema, httpPart }) => withValueRule((httpPart === 'body' ? bodyAjv : paramAjv).compile(schema as object));
}
