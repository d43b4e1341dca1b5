// The validator of both APIs' routes (docs/security.md "Strict input"): input is checked as sent, by the
// TypeBox compiler, with no coercion (a string is never a boolean, number or list), no defaults filled
// in and no unknown property removed. The only conversion is the one a schema asks for: a querystring
// property marked with QueryInteger (core/api-schemas/query.ts) is read from plain decimal text.
import type { FastifySchemaCompiler } from 'fastify';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { OptionalKind, type TSchema } from '@sinclair/typebox';
import type { ValueError } from '@sinclair/typebox/errors';
import { CustodyError } from '../core/errors/custody-error.ts';
import { FROM_QUERY_TEXT } from '../core/api-schemas/query.ts';

const DECIMAL = /^(0|-?[1-9][0-9]{0,15})$/;

/** The properties of a querystring schema that it marks as numbers given as text. */
function numericQueryProperties(schema: TSchema): string[] {
  const props = (schema as { properties?: Record<string, TSchema> }).properties ?? {};
  return Object.keys(props).filter((k) => props[k]![FROM_QUERY_TEXT] === 'integer');
}

export const strictValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = TypeCompiler.Compile(schema);
  // A route whose body is Type.Optional accepts a request without one (Fastify passes null then).
  const optional = httpPart === 'body' && schema[OptionalKind] === 'Optional';
  const numeric = httpPart === 'querystring' ? numericQueryProperties(schema) : [];
  return (input: unknown) => {
    if (input === null && optional) return { value: undefined };
    let value = input;
    if (numeric.length > 0 && typeof input === 'object' && input !== null) {
      const q = { ...(input as Record<string, unknown>) };
      for (const k of numeric) if (typeof q[k] === 'string' && DECIMAL.test(q[k])) q[k] = Number(q[k]);
      value = q;
    }
    if (check.Check(value)) return { value };
    return { error: new SchemaValidationError(schemaFieldErrors(check.Errors(value), httpPart)) };
  };
};

/** One rejected field of a request: its path (`surfaces.email.brand_name`) and why. */
export interface FieldError { field: string; reason: string }

/**
 * 422 validation_failed naming every rejected field at once: the message lists them
 * (`field: reason; field: reason`) and the error body adds them as `fields` (docs/platform/errors.md).
 */
export class FieldValidationError extends CustodyError {
  readonly fields: readonly FieldError[];
  constructor(fields: readonly FieldError[]) {
    super('validation_failed', fields.map((f) => `${f.field}: ${f.reason}`).join('; '));
    this.fields = fields;
  }
}

/** At most this many fields are named: the walk over a hostile body's errors stops there (each field once). */
export const MAX_FIELD_ERRORS = 50;

/** A JSON pointer (`/rules/0/asset`) as the field it names (`rules[0].asset`); the part itself for the root. */
export function fieldOfPointer(pointer: string, part: string | undefined): string {
  const steps = pointer.split('/').slice(1).map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (steps.length === 0) return part === 'querystring' ? 'query' : part ?? 'body';
  return steps.reduce((acc, s, i) => (/^(0|[1-9][0-9]*)$/.test(s) ? `${acc}[${s}]` : i === 0 ? s : `${acc}.${s}`), '');
}

/**
 * Every rejected field of a schema check, each once with the first rule it broke, by its JSON name
 * (docs/platform/errors.md). The walk is lazy and stops at MAX_FIELD_ERRORS, so a body of many bad
 * elements costs no more than that many errors.
 */
export function schemaFieldErrors(errors: Iterable<ValueError>, part: string | undefined): FieldError[] {
  const fields = new Map<string, string>();
  for (const e of errors) {
    const field = fieldOfPointer(e.path, part);
    if (fields.has(field)) continue;
    const anyOf = e.schema.anyOf as TSchema[] | undefined;
    const choices = anyOf?.every((s) => 'const' in s) ? ` (one of ${anyOf.map((s) => s.const as unknown).join(', ')})` : '';
    fields.set(field, `${e.message}${choices}`);
    if (fields.size >= MAX_FIELD_ERRORS) break;
  }
  if (fields.size === 0) fields.set(fieldOfPointer('', part), 'invalid');
  return [...fields].map(([field, reason]) => ({ field, reason }));
}

/**
 * 400 invalid_request for input that breaks its route's schema (a wrong JSON type, an unknown or missing
 * field, a pattern or a bound), naming every such field as FieldValidationError does for 422.
 */
export class SchemaValidationError extends CustodyError {
  readonly fields: readonly FieldError[];
  constructor(fields: readonly FieldError[]) {
    super('invalid_request', fields.map((f) => `${f.field}: ${f.reason}`).join('; '));
    this.fields = fields;
  }
}
