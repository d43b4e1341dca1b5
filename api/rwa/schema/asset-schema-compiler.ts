// An asset schema compiled (docs/platform/rwa.md "Asset schemas"): JSON Schema draft 2020-12, validated and
// compiled by ajv in strict mode with its formats, within size and depth limits, plus the one annotation
// keyword of this layer, `x-visibility`, which says where a field's value goes:
//   - `public`: on chain in clear, in the token's metadata;
//   - `committed`: on chain as a salted SHA-256 commitment only, the value off chain;
//   - `private` (the default, so nothing reaches a chain unless the schema says so): off chain only.
// A field is a leaf of the schema's `properties` tree (through local `$ref`s into `$defs`), named by its
// dot-joined path. Every refusal is `422 asset_schema_invalid` with the reason.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { canonicalJson, valueSha256 } from './canonical-json.ts';

export const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';
export const VISIBILITIES = ['public', 'committed', 'private'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

/** What a schema may be: bounded so that compiling and validating stay cheap. */
export const SCHEMA_LIMITS = {
  /** Canonical JSON bytes of the whole schema. */
  maxBytes: 64 * 1024,
  /** Nesting of objects and arrays in the schema document. */
  maxDepth: 16,
  /** Fields (leaves) one schema defines. */
  maxFields: 200,
  /** Characters of one `pattern` or `patternProperties` key. */
  maxPatternLength: 256,
} as const;

/** A property name: a field path is these joined by dots, so a path fits a URL segment as it is. */
export const PROPERTY_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** A field path as a route takes it. */
export const FIELD_PATH = /^[A-Za-z_][A-Za-z0-9_]{0,63}(\.[A-Za-z_][A-Za-z0-9_]{0,63}){0,15}$/;

export interface FieldSpec {
  path: string;
  /** The JSON Schema `type` of the leaf, as written (null when it has none). */
  type: string | string[] | null;
  visibility: Visibility;
  /** Required at every level from the root down to it. */
  required: boolean;
  title: string | null;
  description: string | null;
}

export interface CompiledSchema {
  /** SHA-256 of the schema's canonical JSON. */
  sha256: string;
  fields: FieldSpec[];
  validate: ValidateFunction;
}

/** One reason a document fails its schema, at a field path (`''` for the root). */
export interface FieldProblem { path: string; message: string }

const invalid = (why: string) => new CustodyError('asset_schema_invalid', why);
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => unknown;

function depthOf(v: unknown, depth = 0): number {
  if (depth > SCHEMA_LIMITS.maxDepth) return depth;
  if (Array.isArray(v)) return Math.max(depth, ...v.map((x) => depthOf(x, depth + 1)));
  if (typeof v === 'object' && v !== null) return Math.max(depth, ...Object.values(v).map((x) => depthOf(x, depth + 1)));
  return depth;
}

/**
 * Refuses a pattern likely to backtrack catastrophically: a quantified group that itself holds a quantifier
 * or an alternation (`(a+)+`, `(a|aa)*`), or a backreference. A heuristic on the customer's own schema: a
 * pattern runs on the API's event loop, so one that can take exponential time is refused up front.
 */
export function riskyPattern(p: string): string | undefined {
  if (p.length > SCHEMA_LIMITS.maxPatternLength) return `longer than ${SCHEMA_LIMITS.maxPatternLength} characters`;
  if (/\\[1-9]|\\k</.test(p)) return 'a backreference';
  const stack: boolean[] = [];
  let inClass = false;
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '\\') { i++; continue; }
    if (inClass) { if (c === ']') inClass = false; continue; }
    if (c === '[') { inClass = true; continue; }
    if (c === '(') { stack.push(false); continue; }
    if (c === ')') {
      const heavy = stack.pop() ?? false;
      const next = p[i + 1];
      if (heavy && (next === '*' || next === '+' || next === '{')) return 'a quantified group that holds a quantifier or an alternation';
      if (heavy && stack.length) stack[stack.length - 1] = true;
      continue;
    }
    if ((c === '*' || c === '+' || c === '{' || c === '|') && stack.length) stack[stack.length - 1] = true;
  }
  return undefined;
}

const NAMING_KEYWORDS = new Set(['$id', '$anchor', '$dynamicAnchor', '$dynamicRef']);

function checkDocument(v: unknown, at: string): void {
  if (Array.isArray(v)) { v.forEach((x, i) => checkDocument(x, `${at}/${i}`)); return; }
  if (typeof v !== 'object' || v === null) return;
  for (const [k, x] of Object.entries(v)) {
    // A document stands alone: nothing in it names itself for others to find (see `validatorOf`).
    if (NAMING_KEYWORDS.has(k)) throw invalid(`${at}/${k}: refused; a schema is self-contained, its references are local (#/$defs/…)`);
    if (k === 'pattern' && typeof x === 'string') {
      const why = riskyPattern(x);
      if (why) throw invalid(`${at}/pattern: refused (${why})`);
    }
    if (k === 'patternProperties' && typeof x === 'object' && x !== null) {
      for (const p of Object.keys(x)) {
        const why = riskyPattern(p);
        if (why) throw invalid(`${at}/patternProperties: ${JSON.stringify(p)} refused (${why})`);
      }
    }
    checkDocument(x, `${at}/${k}`);
  }
}

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Follows a local `$ref` (`#/$defs/<name>`) to what it names; a node without one is itself. */
function resolve(root: Node, node: Node, seen: Set<string>): Node {
  let n = node;
  while (typeof n.$ref === 'string') {
    const ref = n.$ref;
    const m = /^#\/\$defs\/([^/]+)$/.exec(ref);
    if (!m) return n;
    if (seen.has(ref)) throw invalid(`${ref}: a field's $ref leads back to itself`);
    seen.add(ref);
    const defs = root.$defs;
    const target = isNode(defs) ? defs[m[1]!] : undefined;
    if (!isNode(target)) return n;
    n = target;
  }
  return n;
}

function fieldsOf(root: Node): FieldSpec[] {
  const out: FieldSpec[] = [];
  const walk = (node: Node, path: string[], visibility: Visibility, required: boolean, seen: Set<string>) => {
    const props = node.properties;
    if (!isNode(props)) return;
    const req = Array.isArray(node.required) ? new Set(node.required.filter((x): x is string => typeof x === 'string')) : new Set<string>();
    for (const [name, sub0] of Object.entries(props)) {
      if (!PROPERTY_NAME.test(name)) throw invalid(`property ${JSON.stringify([...path, name].join('.'))}: a property name is a letter or _ then up to 63 letters, digits or _`);
      if (!isNode(sub0)) continue;
      const refs = new Set(seen);
      const sub = resolve(root, sub0, refs);
      const own = sub0['x-visibility'] ?? sub['x-visibility'];
      const vis = typeof own === 'string' ? own as Visibility : visibility;
      const here = [...path, name];
      const isReq = required && req.has(name);
      if (isNode(sub.properties)) { walk(sub, here, vis, isReq, refs); continue; }
      const type = sub.type;
      out.push({
        path: here.join('.'), type: typeof type === 'string' || Array.isArray(type) ? type as string | string[] : null, visibility: vis, required: isReq,
        title: typeof sub.title === 'string' ? sub.title : null, description: typeof sub.description === 'string' ? sub.description : null,
      });
      if (out.length > SCHEMA_LIMITS.maxFields) throw invalid(`more than ${SCHEMA_LIMITS.maxFields} fields`);
    }
  };
  const rootVis = root['x-visibility'];
  walk(root, [], typeof rootVis === 'string' ? rootVis as Visibility : 'private', true, new Set());
  return out;
}

let shared: Ajv2020 | undefined;

/**
 * Compiles with one ajv instance (building one costs ten times a compile), then forgets the document, so
 * nothing of one customer's schema stays for another's to meet: a document names nothing for others to find
 * (no `$id` or anchors, refused above) and nothing outside it resolves (no loader: a remote `$ref` is refused).
 */
function validatorOf(doc: Record<string, unknown>): ValidateFunction {
  if (!shared) {
    shared = new Ajv2020({ strict: true, allErrors: true, logger: false, validateSchema: true, addUsedSchema: false });
    addFormats(shared);
    shared.addKeyword({ keyword: 'x-visibility', schemaType: 'string', metaSchema: { enum: [...VISIBILITIES] } });
  }
  try {
    return shared.compile(doc);
  } catch (err) {
    throw invalid(`ajv: ${(err as Error).message}`);
  } finally {
    shared.removeSchema(doc);
  }
}

const cache = new Map<string, CompiledSchema>();
const CACHE_SIZE = 256;

/** Compiles a schema document, or refuses it with `asset_schema_invalid` and why. */
export function compileAssetSchema(doc: unknown): CompiledSchema {
  if (!isNode(doc)) throw invalid('a schema is a JSON object');
  let text: string;
  try {
    text = canonicalJson(doc);
  } catch (err) {
    throw invalid((err as Error).message);
  }
  if (Buffer.byteLength(text) > SCHEMA_LIMITS.maxBytes) throw invalid(`larger than ${SCHEMA_LIMITS.maxBytes} bytes`);
  const sha256 = valueSha256(doc);
  const hit = cache.get(sha256);
  if (hit) return hit;
  if (depthOf(doc) > SCHEMA_LIMITS.maxDepth) throw invalid(`nested deeper than ${SCHEMA_LIMITS.maxDepth} levels`);
  if (doc.$schema !== undefined && doc.$schema !== DRAFT_2020_12) throw invalid(`$schema: only ${DRAFT_2020_12} (draft 2020-12)`);
  if (doc.type !== 'object' || !isNode(doc.properties)) throw invalid('the root is {"type": "object", "properties": {...}}: a token\'s fields are its properties');
  checkDocument(doc, '#');
  const validate = validatorOf(doc);
  const fields = fieldsOf(doc);
  if (fields.length === 0) throw invalid('the schema defines no field');
  const compiled = { sha256, fields, validate };
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(sha256, compiled);
  return compiled;
}

/** Turns an ajv instance path (`/coupon/rate`) into a field path (`coupon.rate`). */
const pathOf = (e: ErrorObject) => e.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')).join('.');

/**
 * What is wrong with a (possibly incomplete) document: every failure but a missing required property, since
 * fields are set one at a time. What is missing is `missingRequired`'s answer.
 */
export function documentProblems(s: CompiledSchema, doc: Record<string, unknown>): FieldProblem[] {
  if (s.validate(doc)) return [];
  const out: FieldProblem[] = [];
  for (const e of s.validate.errors ?? []) {
    if (e.keyword === 'required' || e.keyword === 'dependentRequired') continue;
    // A combinator's summary repeats what its branches said, which are kept.
    if (e.keyword === 'if') continue;
    const path = pathOf(e);
    const where = e.keyword === 'additionalProperties' ? [path, String((e.params as { additionalProperty?: string }).additionalProperty)].filter(Boolean).join('.') : path;
    out.push({ path: where, message: e.message ?? e.keyword });
  }
  return out;
}

/** Required fields (required at every level) a document does not set. */
export function missingRequired(s: CompiledSchema, doc: Record<string, unknown>): string[] {
  return s.fields.filter((f) => f.required && getPath(doc, f.path) === undefined).map((f) => f.path);
}

export function getPath(doc: Record<string, unknown>, path: string): unknown {
  let v: unknown = doc;
  for (const k of path.split('.')) {
    if (!isNode(v)) return undefined;
    v = v[k];
  }
  return v;
}

/** A copy of `doc` with `path` set to `value`, creating the objects on the way. */
export function withPath(doc: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const keys = path.split('.');
  const set = (o: Record<string, unknown>, i: number): Record<string, unknown> => {
    const k = keys[i]!;
    if (i === keys.length - 1) return { ...o, [k]: value };
    const inner = isNode(o[k]) ? o[k] as Record<string, unknown> : {};
    return { ...o, [k]: set(inner, i + 1) };
  };
  return set(doc, 0);
}

/** The document the fields make: each path set to its value. */
export function documentOf(values: Iterable<{ path: string; value: unknown }>): Record<string, unknown> {
  let doc: Record<string, unknown> = {};
  for (const f of values) doc = withPath(doc, f.path, f.value);
  return doc;
}
