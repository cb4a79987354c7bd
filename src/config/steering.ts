// Operator steering of a running campaign: payloads of the campaign's
// updates and their validators. Pure module: the campaign workflow's update
// validators and the CLI both call these, so a value the CLI refuses is
// refused with the same words by the workflow (which has the last say, as
// only it knows the campaign's hosts). No Node APIs and no URL parsing here.
import { CrawlerError } from '../errors';
import { RENDER_MODES, type RenderMode } from './render-modes';

/** Largest pause an operator may set between two requests to one host: one hour. */
export const MAX_STEER_DELAY_MS = 3_600_000;
/** Largest campaign concurrency an operator may set (beyond it, say null: unlimited). */
export const MAX_ACTIVE_HOSTS = 1_000_000;
/** Most seeds one addSeeds update may carry (the update's payload lands in history). */
export const MAX_ADD_SEEDS = 10_000;

export interface SetPolitenessRequest {
  /** One host (politeness key, `host[:port]`); omitted = campaign-wide. */
  host?: string;
  minDelayMs: number;
}
export interface SetPolitenessResult {
  host: string | null;
  minDelayMs: number;
}

export interface SetConcurrencyRequest {
  /** Most hosts crawled at once; null = unlimited. */
  maxActiveHosts: number | null;
}
export interface SetConcurrencyResult {
  maxActiveHosts: number | null;
}

export interface SetBudgetsRequest {
  /** null = unlimited; omitted = unchanged. */
  maxPages?: number | null;
  maxDepth?: number | null;
}
export interface SetBudgetsResult {
  configVersion: number;
  budgets: { maxPages: number | null; maxDepth: number | null };
}

export interface AddSeedsRequest {
  seeds: string[];
}
export interface AddSeedsResult {
  accepted: string[];
  rejected: { seed: string; reason: string }[];
}

export interface HostRequest {
  host: string;
}
export interface HostPauseResult {
  host: string;
  paused: boolean;
}

export interface SetRenderRequest {
  /** One host (`host[:port]`): the render mode is steered per host only. */
  host: string;
  /** The host's render mode from its next session; null: the campaign's own again. */
  render: RenderMode | null;
}
export interface SetRenderResult {
  host: string;
  render: RenderMode | null;
}

/** The render modes an operator may give a host. */
export const STEER_RENDER_MODES: readonly RenderMode[] = RENDER_MODES;

/** A steering request the campaign refuses; nothing was changed. */
export class SteeringError extends CrawlerError<'STEERING_REFUSED'> {
  constructor(message: string) {
    super('STEERING_REFUSED', message);
    this.name = 'SteeringError';
  }
}

const shown = (v: unknown): string => (typeof v === 'number' ? String(v) : (JSON.stringify(v) ?? String(v)));

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function checkMinDelayMs(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_STEER_DELAY_MS) {
    throw new SteeringError(`minDelayMs must be a whole number of milliseconds from 0 to ${MAX_STEER_DELAY_MS} (got ${shown(v)})`);
  }
  return v;
}

function checkLimit(name: string, v: unknown): number | null | undefined {
  if (v === undefined || v === null) return v;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw new SteeringError(`${name} must be a whole number ≥ 0, or null for unlimited (got ${shown(v)})`);
  }
  return v;
}

/**
 * The campaign's host key an operator means: the exact key (`host[:port]`,
 * case-insensitive; a pasted URL works too), or a bare hostname that
 * matches exactly one known key whatever its port.
 */
export function resolveKnownHost(input: unknown, known: Iterable<string>): string {
  const wanted = wantedHost(input);
  const hosts = [...known];
  if (hosts.includes(wanted)) return wanted;
  const byName = hosts.filter((h) => h.replace(/:\d+$/, '') === wanted);
  if (byName.length === 1) return byName[0];
  if (byName.length > 1) throw new SteeringError(`host ${shown(input)} is ambiguous in this campaign: ${byName.sort().join(', ')}; give the port`);
  const sample = hosts.sort().slice(0, 5).join(', ');
  throw new SteeringError(`host ${shown(input)} is not known to this campaign` + (hosts.length > 0 ? ` (${hosts.length} known, e.g. ${sample})` : ' (it knows no host yet)'));
}

/** The host key an operator typed (`host[:port]`, a pasted URL, any case), before it is matched against the campaign's hosts. */
export function wantedHost(input: unknown): string {
  if (typeof input !== 'string' || input.trim() === '') throw new SteeringError(`host must be a non-empty string such as "example.com" (got ${shown(input)})`);
  return input
    .trim()
    .toLowerCase()
    .replace(/^[a-z][a-z0-9+.-]*:\/\//, '')
    .replace(/[/?#].*$/, '')
    .replace(/\.$/, '');
}

/** Checks a setPoliteness request; `known` is omitted by callers that cannot know the hosts (the CLI). */
export function validateSetPoliteness(req: unknown, known?: Iterable<string>): { host: string | null; minDelayMs: number } {
  if (!isObject(req)) throw new SteeringError('setPoliteness needs an object { host?, minDelayMs }');
  const minDelayMs = checkMinDelayMs(req.minDelayMs);
  if (req.host === undefined || req.host === null) return { host: null, minDelayMs };
  return { host: known ? resolveKnownHost(req.host, known) : String(req.host), minDelayMs };
}

/**
 * Per host only: a campaign's pages render as its `render` setting says; an
 * operator moves one host to rendering (a site that turns out to build its
 * pages by script) or away from it (a site whose renders cost and find nothing).
 */
export function validateSetRender(req: unknown, known?: Iterable<string>): { host: string; render: RenderMode | null } {
  if (!isObject(req)) throw new SteeringError('setRender needs an object { host, render }');
  const render = req.render;
  if (render !== null && !STEER_RENDER_MODES.includes(render as RenderMode)) {
    throw new SteeringError(`render must be one of ${STEER_RENDER_MODES.join(', ')}, or null for the campaign's own (got ${shown(render)})`);
  }
  if (req.host === undefined || req.host === null) throw new SteeringError("render is steered per host: give the host (the campaign's render setting applies to the others)");
  return { host: known ? resolveKnownHost(req.host, known) : wantedHost(req.host), render: render as RenderMode | null };
}

/**
 * Campaign-wide only: a host's own concurrency is always one request at a
 * time (robots.txt Crawl-delay assumes it), so there is no per-host form.
 */
export function validateSetConcurrency(req: unknown): SetConcurrencyRequest {
  if (!isObject(req)) throw new SteeringError('setConcurrency needs an object { maxActiveHosts }');
  if ('host' in req && req.host !== undefined) {
    throw new SteeringError('concurrency is set for the whole campaign: a host is always crawled one request at a time (use set-rate --host to slow one host down)');
  }
  const v = req.maxActiveHosts;
  if (v === null) return { maxActiveHosts: null };
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_ACTIVE_HOSTS) {
    throw new SteeringError(`maxActiveHosts must be a whole number from 1 to ${MAX_ACTIVE_HOSTS}, or null for unlimited (got ${shown(v)})`);
  }
  return { maxActiveHosts: v };
}

export function validateSetBudgets(req: unknown): SetBudgetsRequest {
  if (!isObject(req)) throw new SteeringError('setBudgets needs an object { maxPages?, maxDepth? }');
  const maxPages = checkLimit('maxPages', req.maxPages);
  const maxDepth = checkLimit('maxDepth', req.maxDepth);
  if (maxPages === undefined && maxDepth === undefined) throw new SteeringError('setBudgets needs maxPages or maxDepth (a number, or null for unlimited)');
  const out: SetBudgetsRequest = {};
  if (maxPages !== undefined) out.maxPages = maxPages;
  if (maxDepth !== undefined) out.maxDepth = maxDepth;
  return out;
}

/** List-level checks only: per-seed problems are answered in AddSeedsResult.rejected. */
export function validateAddSeeds(req: unknown): AddSeedsRequest {
  if (!isObject(req) || !Array.isArray(req.seeds)) throw new SteeringError('addSeeds needs an object { seeds: string[] }');
  if (req.seeds.length === 0) throw new SteeringError('addSeeds needs at least one seed URL');
  if (req.seeds.length > MAX_ADD_SEEDS) throw new SteeringError(`addSeeds takes at most ${MAX_ADD_SEEDS} seeds at once (got ${req.seeds.length})`);
  if (req.seeds.some((s) => typeof s !== 'string')) throw new SteeringError('every seed must be a string');
  return { seeds: req.seeds as string[] };
}

export function validateHostRequest(req: unknown, known?: Iterable<string>): string {
  if (!isObject(req)) throw new SteeringError('needs an object { host }');
  return known ? resolveKnownHost(req.host, known) : resolveKnownHost(req.host, [String(req.host).trim().toLowerCase()]);
}

/** CLI text → number for the validators: digits become a number, anything else stays text so the message shows it. */
export function parseNumberArg(text: string): number | string {
  return /^-?\d+(\.\d+)?$/.test(text.trim()) ? Number(text.trim()) : text;
}

/** CLI text for a render mode: "campaign" (or "default") → null, the campaign's own; anything else as typed, for the validator. */
export function parseRenderArg(text: string): RenderMode | null | string {
  return /^(campaign|default)$/i.test(text.trim()) ? null : text.trim().toLowerCase();
}

/** CLI text for a budget: "none" / "unlimited" → null, else as parseNumberArg. */
export function parseLimitArg(text: string): number | null | string {
  return /^(none|unlimited|null)$/i.test(text.trim()) ? null : parseNumberArg(text);
}

/** What the domain workflow shows as the reason for an operator-set delay. */
export function operatorDelayReason(minDelayMs: number, perHost: boolean): string {
  return `operator set ${minDelayMs} ms${perHost ? ' for this host' : ''}`;
}
