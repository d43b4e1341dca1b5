// Free text in request bodies (docs/security.md "Strict input", docs/platform/errors.md): every string
// field of a body schema without a `format`, `pattern`, `enum` or `const` is free text (a name, a label,
// a description, a memo, and the opaque tokens, whose alphabet is ASCII anyway). One rule for all of
// them, applied once by the validator (api/validation.ts) after the schema check, so no route repeats it:
//   - refused: lone surrogates; control characters (C0, DEL, C1; in a field marked `x-text: multiline`
//     tab, LF and CR are allowed); the line and paragraph separators and the bidirectional override and
//     isolate controls outside multi-line fields; a non-empty value with nothing visible in it (only
//     spaces, zero-width or other default-ignorable characters);
//   - stored in Unicode Normalization Form C, so two spellings of one name are one name.
// A refusal is a 422 validation_failed naming every refused field (FieldValidationError).
import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { FieldValidationError, type FieldError } from './validation.ts';

/** The schema annotation of a free-text field where line breaks and tabs are allowed. */
export const TEXT_KIND = 'x-text';
export type TextKind = 'multiline';

const LINE_SEPARATORS = new Set([0x2028, 0x2029]);
const MULTILINE_WHITESPACE = new Set([0x09, 0x0a, 0x0d]);
const isControl = (cp: number) => cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f);
const isBidiControl = (cp: number) => (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
// Default-ignorable and blank-rendering code points beyond \s and \p{Cf}: the Hangul fillers, the
// combining grapheme joiner, the Mongolian vowel separator, variation selectors and the Braille blank.
const BLANK = /^[\s\p{Cf}\p{Zs}]$/u;
const INVISIBLE_RANGES: readonly [number, number][] = [
  [0x034f, 0x034f], [0x115f, 0x1160], [0x17b4, 0x17b5], [0x180b, 0x180f], [0x2800, 0x2800], [0x3164, 0x3164],
  [0xffa0, 0xffa0], [0xfe00, 0xfe0f], [0xe0000, 0xe0fff],
];
const isInvisible = (ch: string) => BLANK.test(ch) || INVISIBLE_RANGES.some(([lo, hi]) => ch.codePointAt(0)! >= lo && ch.codePointAt(0)! <= hi);

/** Why `v` is refused as free text, or undefined when it is acceptable. */
export function textProblem(v: string, kind?: TextKind): string | undefined {
  const multiline = kind === 'multiline';
  for (const ch of v) {
    const cp = ch.codePointAt(0)!;
    // Iterating by code point, a surrogate pair is one code point: a surrogate seen here is alone.
    if (cp >= 0xd800 && cp <= 0xdfff) return 'must be valid Unicode text (no lone surrogates)';
    if (isControl(cp) && !(multiline && MULTILINE_WHITESPACE.has(cp))) return multiline ? 'control characters other than tab and line breaks are not allowed' : 'control characters (line breaks and tabs included) are not allowed';
    if (!multiline && LINE_SEPARATORS.has(cp)) return 'line breaks are not allowed';
    if (isBidiControl(cp)) return 'bidirectional override characters are not allowed';
  }
  if (isInvisibleOnly(v)) return 'must contain a visible character';
  return undefined;
}

/** A non-empty value in which nothing would be seen: only spaces, zero-width or other default-ignorable characters. */
export function isInvisibleOnly(v: string): boolean {
  if (v.length === 0) return false;
  for (const ch of v) if (!isInvisible(ch)) return false;
  return true;
}

/** Whether a schema node is a free-text string (no format, pattern, enum or const narrows it). */
export function isFreeText(schema: Record<string, unknown>): boolean {
  return schema.type === 'string' && !('format' in schema) && !('pattern' in schema) && !('enum' in schema) && !('const' in schema);
}

type Node = TSchema & Record<string, unknown>;

/**
 * Checks and normalizes every free-text string of `value` as `schema` describes it, in place; returns
 * the refused fields (JSON paths such as `rules[0].name`). `value` has passed the schema check.
 */
export function checkFreeText(schema: TSchema, value: unknown): FieldError[] {
  const errors: FieldError[] = [];
  const visit = (node: Node, v: unknown, path: string, set: (x: string) => void): void => {
    if (typeof v === 'string') {
      const strings = stringBranches(node, v);
      if (strings.length === 0 || !strings.every(isFreeText)) return;
      const kind = strings.some((s) => s[TEXT_KIND] === 'multiline') ? 'multiline' : undefined;
      const problem = textProblem(v, kind);
      if (problem) errors.push({ field: path || 'body', reason: problem });
      else if (v.normalize('NFC') !== v) set(v.normalize('NFC'));
      return;
    }
    if (Array.isArray(v)) {
      const items = arrayItems(node, v);
      if (items) v.forEach((x, i) => visit(items, x, `${path}[${i}]`, (y) => { v[i] = y; }));
      return;
    }
    if (typeof v === 'object' && v !== null) {
      const obj = v as Record<string, unknown>;
      const branch = objectBranch(node, obj);
      if (!branch) return;
      const props = (branch.properties ?? {}) as Record<string, Node>;
      const extra = typeof branch.additionalProperties === 'object' ? branch.additionalProperties as Node : undefined;
      const patterns = (branch.patternProperties ?? {}) as Record<string, Node>;
      for (const key of Object.keys(obj)) {
        const sub = Object.hasOwn(props, key) ? props[key] : Object.entries(patterns).find(([p]) => new RegExp(p).test(key))?.[1] ?? extra;
        if (sub) visit(sub, obj[key], path ? `${path}.${key}` : key, (y) => { obj[key] = y; });
      }
    }
  };
  visit(schema as Node, value, '', () => undefined);
  return errors;
}

function alternatives(node: Node): Node[] {
  const any = (node.anyOf ?? node.oneOf) as Node[] | undefined;
  return any ? any.flatMap(alternatives) : [node];
}

function stringBranches(node: Node, v: string): Node[] {
  return alternatives(node).filter((s) => s.type === 'string' && Value.Check(s, v));
}

function arrayItems(node: Node, v: unknown[]): Node | undefined {
  const arrays = alternatives(node).filter((s) => s.type === 'array' && typeof s.items === 'object');
  return (arrays.length > 1 ? arrays.find((s) => Value.Check(s, v)) : arrays[0])?.items as Node | undefined;
}

function objectBranch(node: Node, v: Record<string, unknown>): Node | undefined {
  const objects = alternatives(node).filter((s) => s.type === 'object');
  return objects.length > 1 ? objects.find((s) => Value.Check(s, v)) : objects[0];
}

/**
 * A validator compiler that runs `inner` (the schema check: 400 on a violation) and then, on a body that
 * passed it, the free-text rules (422 naming every refused field), returning the NFC-normalized body.
 */
export function withFreeTextRules(inner: FastifySchemaCompiler<TSchema>): FastifySchemaCompiler<TSchema> {
  return (route) => {
    const check = inner(route);
    if (route.httpPart !== 'body') return check;
    return (input: unknown) => {
      const result = check(input) as { value?: unknown; error?: Error } | boolean;
      if (typeof result !== 'object' || result.error) return result;
      const errors = checkFreeText(route.schema, result.value);
      return errors.length > 0 ? { error: new FieldValidationError(errors) } : result;
    };
  };
}
