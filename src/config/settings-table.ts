// The table of campaign settings in docs/settings.md, generated from the
// schema (src/config/campaign.ts) so the docs cannot drift from the code:
// test/unit/campaign-settings.test.ts checks that the file holds this table.
// Kept out of campaign.ts so the workflow bundle does not carry it.
import type { z } from 'zod';
import { campaignSchema } from './campaign';

interface Field {
  path: string;
  schema: z.ZodType;
  defaultValue?: unknown;
  nullable: boolean;
  description?: string;
}

/** The type under the wrappers (default, nullable, a transform), with what the wrappers say. */
function unwrap(path: string, schema: z.ZodType): Field {
  const field: Field = { path, schema, nullable: false };
  for (;;) {
    field.description ??= schema.description;
    const def = schema._zod.def as { type: string; innerType?: z.ZodType; in?: z.ZodType; defaultValue?: unknown };
    if (def.type === 'default') field.defaultValue = def.defaultValue;
    if (def.type === 'nullable') field.nullable = true;
    const next = def.type === 'pipe' ? def.in : ['default', 'prefault', 'nullable', 'optional'].includes(def.type) ? def.innerType : undefined;
    if (!next) break;
    schema = next;
  }
  field.schema = schema;
  return field;
}

/** Every leaf setting, in the schema's order (sections are walked into). */
function leaves(prefix: string, shape: Record<string, z.ZodType>): Field[] {
  return Object.entries(shape).flatMap(([key, schema]) => {
    const field = unwrap(prefix + key, schema);
    const inner = field.schema as z.ZodType & { shape?: Record<string, z.ZodType> };
    return inner._zod.def.type === 'object' && inner.shape ? leaves(`${field.path}.`, inner.shape) : [field];
  });
}

function accepted(f: Field): string {
  const s = f.schema as z.ZodType & { minValue?: number | null; maxValue?: number | null; isInt?: boolean; options?: string[] };
  const def = s._zod.def as { type: string; checks?: { _zod: { def: { check: string; inclusive?: boolean } } }[]; element?: z.ZodType };
  let text: string;
  if (def.type === 'number') {
    const above = def.checks?.some((c) => c._zod.def.check === 'greater_than' && c._zod.def.inclusive === false);
    const min = s.minValue ?? -Infinity;
    const max = s.maxValue !== null && s.maxValue !== undefined && s.maxValue < Number.MAX_SAFE_INTEGER ? s.maxValue : null;
    const from = above ? `above ${min}` : max === null ? `≥ ${min}` : `${min}`;
    text = `${s.isInt ? 'whole number' : 'number'} ${from}${max === null ? '' : above ? `, at most ${max}` : ` to ${max}`}`;
  } else if (def.type === 'enum') text = (s.options ?? []).map((v) => `\`${v}\``).join(', ');
  else if (def.type === 'boolean') text = '`true`, `false`';
  else if (def.type === 'array') text = def.element?._zod.def.type === 'object' ? 'list of rules' : 'list of strings';
  else text = 'text';
  return f.nullable ? `${text}, or \`null\`` : text;
}

const DAY = 86_400_000;
const MIB = 1024 * 1024;
/** 2592000000 → "30 d": milliseconds as a reader counts them. */
function humanMs(ms: number): string {
  const units: [number, string][] = [
    [DAY, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1_000, 's'],
  ];
  for (const [size, unit] of units) if (ms >= size && ms % size === 0) return `${ms / size} ${unit}`;
  return `${ms} ms`;
}

function shownDefault(f: Field): string {
  if (f.path === 'campaignId') return 'the workflow ID';
  if (f.defaultValue === undefined) return '–';
  const v = f.defaultValue;
  const human = typeof v !== 'number' ? '' : /Ms$/.test(f.path) && v >= 1_000 ? ` (${humanMs(v)})` : /Bytes$/.test(f.path) && v % MIB === 0 ? ` (${v / MIB} MiB)` : '';
  return `\`${JSON.stringify(v)}\`${human}`;
}

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The Markdown table of every campaign setting: its path, default, accepted values and meaning. */
export function settingsTable(): string {
  const shape = (campaignSchema._zod.def as unknown as { in: { shape: Record<string, z.ZodType> } }).in.shape;
  const rows = leaves('', shape).map((f) => `| \`${f.path}\` | ${cell(shownDefault(f))} | ${cell(accepted(f))} | ${cell(f.description ?? '')} |`);
  return ['| setting | default | accepted | meaning |', '|---|---|---|---|', ...rows].join('\n') + '\n';
}
