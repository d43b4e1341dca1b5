// How the command-line client prints (docs/sdk.md "Output"): JSON when stdout is not a terminal or
// `--json` is given, so scripts read one JSON value; on a terminal (or with `--table`), a page as a table
// of its items' plain fields and a record as its fields one per line. Errors likewise: one JSON line on
// a pipe, a few lines saying what to do on a terminal.

/** A value for a table cell: scalars as they are, anything nested as compact JSON, cut to `width`. */
function cell(v: unknown, width = 40): string {
  const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  return s.length > width ? `${s.slice(0, width - 1)}…` : s;
}

/** The columns of a table: the fields every row has as a scalar, `id` first, at most eight. */
function columns(rows: Record<string, unknown>[]): string[] {
  const seen = new Map<string, number>();
  for (const r of rows) for (const [k, v] of Object.entries(r)) if (v === null || typeof v !== 'object') seen.set(k, (seen.get(k) ?? 0) + 1);
  const cols = [...seen.keys()].filter((k) => seen.get(k)! * 2 >= rows.length);
  cols.sort((a, b) => (a === 'id' ? -1 : b === 'id' ? 1 : 0));
  return cols.slice(0, 8);
}

export function table(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return '(none)';
  const cols = columns(rows);
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(cols.map((c) => c.toUpperCase())), ...rows.map((r) => line(cols.map((c) => cell(r[c]))))].join('\n');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The human form of a command's result. */
export function human(result: unknown): string {
  if (Array.isArray(result) && result.every(isRecord)) return table(result);
  if (!isRecord(result)) return JSON.stringify(result, null, 2);
  if (Array.isArray(result.data) && result.data.every(isRecord)) {
    const more = result.has_more === true && typeof result.next_cursor === 'string' ? `\nmore: --cursor ${result.next_cursor}` : '';
    return table(result.data) + more;
  }
  const width = Math.max(...Object.keys(result).map((k) => k.length));
  return Object.entries(result).map(([k, v]) => `${k.padEnd(width)}  ${cell(v, 100)}`).join('\n');
}

export interface OutputMode {
  json: boolean;
}

/** The output mode: `--json` or a pipe is JSON; `--table` or a terminal is human. */
export function outputMode(flags: { json?: boolean; table?: boolean }, isTTY: boolean): OutputMode {
  return { json: flags.json === true ? true : flags.table === true ? false : !isTTY };
}

export function render(result: unknown, mode: OutputMode): string {
  return mode.json ? JSON.stringify(result, null, 2) : human(result);
}

/** The error line as scripts read it, and as a person reads it on a terminal. */
export interface ErrorReport {
  error: string;
  code: string;
  status: number | null;
  request_id?: string;
  fields?: readonly { field: string; reason: string }[];
  hint?: string;
}

export function renderError(e: ErrorReport, human: boolean): string {
  if (!human) return JSON.stringify(e);
  const lines = [`error: ${e.error} (${e.code}${e.status !== null ? `, HTTP ${e.status}` : ''})`];
  for (const f of e.fields ?? []) lines.push(`  ${f.field}: ${f.reason}`);
  if (e.hint) lines.push(`what to do: ${e.hint}`);
  if (e.request_id) lines.push(`request id: ${e.request_id} (quote it when reporting a problem)`);
  return lines.join('\n');
}
