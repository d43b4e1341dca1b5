// Querystring values arrive as text. The APIs' validators coerce nothing (api/validation.ts): a
// querystring property is read as a number only when its schema says so with this keyword, and then only
// from a plain decimal integer ("25"; not "25.0", "0x19", "1e2", " 25" or "").
import { Type, type IntegerOptions } from '@sinclair/typebox';

/** Schema keyword marking a querystring property that is parsed from its decimal text before validation. */
export const FROM_QUERY_TEXT = 'x-from-query-text';

/** An integer querystring parameter, parsed from decimal text and then checked against `options`. */
export function QueryInteger(options: IntegerOptions = {}) {
  return Type.Integer({ ...options, [FROM_QUERY_TEXT]: 'integer' });
}
