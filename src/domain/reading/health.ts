import { missedHostReason } from '../logs/account-resolver';
import { parseCloudFrontKey } from '../logs/cloudfront-key';
import { ValidationError } from '../errors';

/** A ledger entry as health reads it from the source-day index. */
export interface LedgerActivity {
  readonly bucket: string;
  readonly key: string;
  readonly etag: string;
  readonly processedAt: string;
  /** Line counts: only on the `#DONE` item (an object's other days carry none). */
  readonly lines?: { readonly read: number; readonly counted: number; readonly unattributed: number; readonly malformed: number };
  /** A few keys (hosts) the resolver could not attribute in this object. */
  readonly unattributedSamples?: readonly string[];
  /** The day it was read under in the source-day index (set by the reader of health). */
  readonly day?: string;
}

/** Days of the source-day index health reads by default (yesterday and today, UTC), and at most. */
export const HEALTH_DAYS = 2;
export const MAX_HEALTH_DAYS = 31;

/** The `days` of a health request (`?days=7`): {@link HEALTH_DAYS} when absent. */
export function parseHealthDays(text: string | undefined): number {
  if (text === undefined) return HEALTH_DAYS;
  return checkHealthDays(/^[0-9]{1,3}$/.test(text) ? Number(text) : Number.NaN, `"${text}"`);
}

/** `days` when it is a whole number from 1 to {@link MAX_HEALTH_DAYS}; a ValidationError naming `shown` otherwise. */
export function checkHealthDays(days: number, shown = String(days)): number {
  if (!(Number.isInteger(days) && days >= 1 && days <= MAX_HEALTH_DAYS)) throw new ValidationError(`days must be a whole number from 1 to ${MAX_HEALTH_DAYS}, not ${shown}`);
  return days;
}

/** Objects and lines per day of the logs, as the source-day index holds them. */
export interface DayHealth {
  readonly day: string;
  /** Objects with lines of the day (each once). */
  readonly objects: number;
  /**
   * The lines of the objects whose ledger item of completion is indexed under the day (an
   * object's lines count once, under its first day); read = counted + unattributed + malformed.
   */
  readonly lines: { read: number; counted: number; unattributed: number; malformed: number };
  /** When the last of them was processed; null when none was. */
  readonly lastProcessedAt: string | null;
}

/** The last `tally reconcile` over a day range, as it recorded itself. */
export interface ReconcileRecord {
  readonly at: string;
  readonly from: string;
  readonly to: string;
  /** Set when the run compared one account only. */
  readonly account?: string;
  readonly objects: number;
  readonly accountDays: number;
  readonly drifting: number;
  readonly notCounted: number;
  readonly failed: number;
  /** Objects no consumer can count (poison); absent from records written before it was kept. */
  readonly poison?: number;
  readonly clean: boolean;
}

/** How far back one key is remembered, from the settings (see `tally plan`). */
export interface HistoryHorizon {
  readonly shards: number;
  readonly cap: number;
  /** Increments of one account-day whose keys the histories hold at once (shards × cap). */
  readonly keysPerAccountDay: number;
  /** Days a key dropped from a history is still found by its tombstone (the ledger TTL). */
  readonly tombstoneDays: number;
}

/**
 * Ingestion health: the body of `GET /v1/health` (admin) and of `tally status --json`,
 * a public contract (fields are added, never renamed).
 */
export interface HealthReport {
  readonly generatedAt: string;
  /** Days of the source-day index read (yesterday and today, UTC, unless asked for more), oldest first. */
  readonly days: readonly string[];
  /** Per day of `days`, oldest first: the objects with lines of that day and their lines. */
  readonly perDay: DayHealth[];
  /** Per distribution (or key prefix when the name carries none): the newest log hour counted, and when. */
  readonly freshness: { source: string; newestHour: string; processedAt: string }[];
  readonly objects: { lastHour: number; lastDay: number };
  /** Lines of the objects processed in the last day, and the rates of those no account or parser took. */
  readonly lines: { read: number; counted: number; unattributed: number; malformed: number; unattributedRate: number; malformedRate: number };
  /**
   * The objects of the last day with the most unattributed or malformed lines, each with
   * the keys (hosts) its resolver missed when it reads one (`samples`).
   */
  readonly missed: { object: string; unattributed: number; malformed: number; read: number; samples: string[] }[];
  /**
   * The distinct keys (hosts) the resolver missed in the last day, most objects first (at
   * most 10), each with why it has no account (an IP address, the CloudFront default domain...).
   */
  readonly missedKeys: { key: string; objects: number; reason: string }[];
  readonly deadLetters: { depth: number; oldestAgeSeconds: number | null } | null;
  readonly lastReconcile: ReconcileRecord | null;
  readonly history: HistoryHorizon;
}

export interface HealthInput {
  readonly now: Date;
  readonly days: readonly string[];
  /** Ledger entries indexed under `days` (an object may appear once per day it touched), each with its `day`. */
  readonly entries: readonly LedgerActivity[];
  readonly deadLetters: HealthReport['deadLetters'];
  readonly lastReconcile: ReconcileRecord | null;
  readonly history: HistoryHorizon;
}

const HOUR_MS = 3_600_000;
const MISSED_SAMPLES = 5;
const MISSED_KEYS = 10;

/** Shapes the health report from what the ledger recorded lately. Pure. */
export function buildHealthReport(input: HealthInput): HealthReport {
  const now = input.now.getTime();
  const objects = new Map<string, LedgerActivity>();
  const freshness = new Map<string, { newestHour: string; processedAt: string }>();
  for (const entry of input.entries) {
    const id = `${entry.bucket}/${entry.key}#${entry.etag}`;
    if (entry.lines !== undefined || !objects.has(id)) objects.set(id, entry);
    const name = parseCloudFrontKey(entry.key);
    if (name === undefined) continue;
    const source = name.distribution ?? prefixOf(entry.key);
    const hour = `${name.day}T${String(name.hour ?? 0).padStart(2, '0')}`;
    const seen = freshness.get(source);
    if (seen === undefined || hour > seen.newestHour || (hour === seen.newestHour && entry.processedAt > seen.processedAt)) {
      freshness.set(source, { newestHour: hour, processedAt: entry.processedAt });
    }
  }
  const within = (ms: number) => [...objects.values()].filter((entry) => now - Date.parse(entry.processedAt) <= ms);
  const lastDay = within(24 * HOUR_MS);
  const lines = { read: 0, counted: 0, unattributed: 0, malformed: 0 };
  for (const entry of lastDay) {
    lines.read += entry.lines?.read ?? 0;
    lines.counted += entry.lines?.counted ?? 0;
    lines.unattributed += entry.lines?.unattributed ?? 0;
    lines.malformed += entry.lines?.malformed ?? 0;
  }
  const rate = (part: number) => (lines.read === 0 ? 0 : Math.round((part / lines.read) * 10_000) / 10_000);
  const missed = lastDay
    .filter((entry) => (entry.lines?.unattributed ?? 0) + (entry.lines?.malformed ?? 0) > 0)
    .sort((a, b) => missedOf(b) - missedOf(a) || (a.key < b.key ? -1 : 1))
    .slice(0, MISSED_SAMPLES)
    .map((entry) => ({
      object: `s3://${entry.bucket}/${entry.key}`,
      unattributed: entry.lines?.unattributed ?? 0,
      malformed: entry.lines?.malformed ?? 0,
      read: entry.lines?.read ?? 0,
      samples: [...(entry.unattributedSamples ?? [])],
    }));
  const keys = new Map<string, number>();
  for (const entry of lastDay) for (const key of entry.unattributedSamples ?? []) keys.set(key, (keys.get(key) ?? 0) + 1);
  const missedKeys = [...keys]
    .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))
    .slice(0, MISSED_KEYS)
    .map(([key, objects]) => ({ key, objects, reason: missedHostReason(key) }));
  return {
    generatedAt: input.now.toISOString(),
    days: input.days,
    perDay: input.days.map((day) => dayHealth(day, input.entries)),
    freshness: [...freshness].map(([source, seen]) => ({ source, ...seen })).sort((a, b) => (a.source < b.source ? -1 : 1)),
    objects: { lastHour: within(HOUR_MS).length, lastDay: lastDay.length },
    lines: { ...lines, unattributedRate: rate(lines.unattributed), malformedRate: rate(lines.malformed) },
    missed,
    missedKeys,
    deadLetters: input.deadLetters,
    lastReconcile: input.lastReconcile,
    history: input.history,
  };
}

function dayHealth(day: string, entries: readonly LedgerActivity[]): DayHealth {
  const objects = new Set<string>();
  const lines = { read: 0, counted: 0, unattributed: 0, malformed: 0 };
  let lastProcessedAt: string | null = null;
  for (const entry of entries) {
    if (entry.day !== day) continue;
    objects.add(`${entry.bucket}/${entry.key}#${entry.etag}`);
    if (lastProcessedAt === null || entry.processedAt > lastProcessedAt) lastProcessedAt = entry.processedAt;
    if (entry.lines === undefined) continue;
    lines.read += entry.lines.read;
    lines.counted += entry.lines.counted;
    lines.unattributed += entry.lines.unattributed;
    lines.malformed += entry.lines.malformed;
  }
  return { day, objects: objects.size, lines, lastProcessedAt };
}

function missedOf(entry: LedgerActivity): number {
  return (entry.lines?.unattributed ?? 0) + (entry.lines?.malformed ?? 0);
}

function prefixOf(key: string): string {
  const slash = key.lastIndexOf('/');
  return slash === -1 ? '(root)' : key.slice(0, slash + 1);
}
