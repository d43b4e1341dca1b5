// The validator of both APIs' routes (docs/security.md "Strict input"): input is checked as sent, by the
// TypeBox compiler, with no coercion (a string is never a boolean, number or list), no defaults filled
// in and no unknown property removed. The only conversion is the one a schema asks for: a querystring
// property marked with QueryInteger (core/api-schemas/query.ts) is read from plain decimal text.
import type { FastifySchemaCompiler } from 'fastify';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { OptionalKind, type TSchema } from '@sinclair/typebox';
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
    const e = check.Errors(value).First();
    const choices = (e?.schema.anyOf as TSchema[] | undefined)?.every((s) => 'const' in s) ? ` (one of ${e!.schema.anyOf.map((s: TSchema) => s.const).join(', ')})` : '';
    return { error: new CustodyError('invalid_request', `${httpPart ?? 'request'}${e?.path ?? ''}: ${e?.message ?? 'invalid'}${choices}`) };
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
