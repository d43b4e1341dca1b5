// Field checks for the session contract's decoders (session-contract.ts): each reads one field of a
// decoded blob value and returns it typed, or throws InputError('bad_params') naming the field. Every
// length is bounded, so a decoded value never holds more than the contract allows.
import { InputError } from '../errors/protocol-errors.ts';

export type Fields = Record<string, unknown>;

const fail = (what: string, problem: string): never => {
  throw new InputError('bad_params', `${what}: ${problem}`);
};

/**
 * A plain object whose keys are all among `required` and `optional`, with every required key present.
 * A key set to undefined counts as absent (an encoder's input may spell an absent field that way).
 */
export function record(v: unknown, what: string, required: readonly string[], optional: readonly string[] = []): Fields {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array) return fail(what, 'not an object');
  const o = v as Fields;
  for (const k of Object.keys(o)) if (o[k] !== undefined && !required.includes(k) && !optional.includes(k)) fail(what, `unknown field ${k.slice(0, 40)}`);
  for (const k of required) if (o[k] === undefined || !Object.hasOwn(o, k)) fail(what, `${k} is missing`);
  return o;
}

/** A string of `min` to `max` UTF-16 units. */
export function text(v: unknown, what: string, max: number, min = 0): string {
  if (typeof v !== 'string') return fail(what, 'not a string');
  if (v.length < min || v.length > max) fail(what, min > 0 ? `${min} to ${max} characters` : `at most ${max} characters`);
  return v;
}

/** One of `values`. */
export function oneOf<T extends string>(v: unknown, what: string, values: readonly T[]): T {
  if (typeof v !== 'string' || !values.includes(v as T)) return fail(what, `one of ${values.join(', ')}`);
  return v as T;
}

/** An integer from `min` to `max`. */
export function int(v: unknown, what: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) return fail(what, `an integer from ${min} to ${max}`);
  return v;
}

/** A byte string of `min` to `max` bytes (exactly `min` when `max` is left out). */
export function bytes(v: unknown, what: string, min: number, max = min): Uint8Array {
  if (!(v instanceof Uint8Array)) return fail(what, 'not a byte string');
  if (v.length < min || v.length > max) fail(what, `${v.length} bytes, not ${min === max ? min : `${min} to ${max}`}`);
  return v;
}

/** Lowercase hex of exactly `len` bytes (the protocols' own fields, such as a key package's points). */
export function hex(v: unknown, what: string, len: number): string {
  if (typeof v !== 'string' || v.length !== 2 * len || !/^[0-9a-f]*$/.test(v)) return fail(what, `${len} bytes of lowercase hex`);
  return v;
}

/** An array of `min` to `max` items, each read by `item`. */
export function list<T>(v: unknown, what: string, max: number, item: (x: unknown, what: string) => T, min = 0): T[] {
  if (!Array.isArray(v)) return fail(what, 'not a list');
  if (v.length < min || v.length > max) fail(what, `${min} to ${max} items, not ${v.length}`);
  return v.map((x, i) => item(x, `${what}[${i}]`));
}

/** An object of at most `max` entries, each key matching `key` and each value read by `item`. */
export function dict<T>(v: unknown, what: string, max: number, key: RegExp, item: (x: unknown, what: string) => T): Record<string, T> {
  const o = record(v, what, [], typeof v === 'object' && v !== null ? Object.keys(v) : []);
  const keys = Object.keys(o).filter((k) => o[k] !== undefined);
  if (keys.length > max) fail(what, `at most ${max} entries`);
  return Object.fromEntries(keys.map((k) => {
    if (!key.test(k)) fail(what, `malformed key ${k.slice(0, 40)}`);
    return [k, item(o[k], `${what}.${k}`)];
  }));
}

/** `read` of field `k` of `o` when it is present; undefined when it is absent. */
export function optional<T>(o: Fields, k: string, read: (v: unknown) => T): T | undefined {
  return Object.hasOwn(o, k) && o[k] !== undefined ? read(o[k]) : undefined;
}

/** `fields` without those that are undefined: an absent optional field stays absent in a decoded value. */
export function defined<T extends Record<string, unknown>>(fields: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(fields).filter(([, x]) => x !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}

export const MAX_UINT32 = 0xffff_ffff;
