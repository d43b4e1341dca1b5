// A schema rebind's dry run (docs/platform/rwa.md "Schema rebinds"): every current value of the token checked
// against the new version, and what differs listed. Pure: what it checks is given.
import { valueSha256 } from './canonical-json.ts';
import { documentOf, documentProblems, missingRequired, type CompiledSchema, type FieldProblem } from './asset-schema-compiler.ts';
import type { DryRun, DryRunField, FieldRecord } from './records.ts';

export interface DryRunSubject {
  token_id: string;
  schema_id: string;
  from: { version: number; sha256: string };
  to: { version: number; sha256: string };
}

/** Whether a problem found at `problem` belongs to the field at `field` (inside its value, or at an object above it). */
const concerns = (field: string, problem: string) => problem === field || problem.startsWith(`${field}.`) || (problem !== '' && field.startsWith(`${problem}.`));

export function dryRun(subject: DryRunSubject, fromSchema: CompiledSchema, toSchema: CompiledSchema, fields: FieldRecord[], ranAt: string): DryRun {
  const doc = documentOf(fields);
  const problems: FieldProblem[] = documentProblems(toSchema, doc);
  const toSpec = new Map(toSchema.fields.map((f) => [f.path, f]));
  const fromPaths = new Set(fromSchema.fields.map((f) => f.path));
  const out: DryRunField[] = fields.map((f) => {
    const spec = toSpec.get(f.path);
    const mine = problems.filter((p) => concerns(f.path, p.path)).map((p) => `${p.path || '(root)'}: ${p.message}`);
    const status: DryRunField['status'] = !spec ? 'undefined_field' : mine.length ? 'invalid' : 'ok';
    return { path: f.path, status, problems: mine, from_visibility: f.visibility, to_visibility: spec?.visibility ?? null };
  }).sort((a, b) => (a.path < b.path ? -1 : 1));
  const unplaced = problems.filter((p) => !fields.some((f) => concerns(f.path, p.path))).map((p) => `${p.path || '(root)'}: ${p.message}`);
  const added = toSchema.fields.filter((f) => !fromPaths.has(f.path)).map((f) => f.path);
  const missing = missingRequired(toSchema, doc);
  const values_sha256 = valueSha256(doc);
  const passed = out.every((f) => f.status === 'ok') && unplaced.length === 0;
  const signed = { subject, values_sha256, passed, fields: out, other_problems: unplaced, added_fields: added, missing_required: missing };
  return { ran_at: ranAt, values_sha256, passed, fields: out, other_problems: unplaced, added_fields: added, missing_required: missing, sha256: valueSha256(signed) };
}
