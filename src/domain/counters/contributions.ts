import { HOURS_PER_DAY, type HourSums } from '../hours';

/**
 * What each log object contributed to each account-day, as the ledger records it when
 * the object completes: the whole increment of every (account, day) the object holds,
 * whatever became of it (applied now, a duplicate of a redelivery, resumed from an
 * earlier attempt). Every such increment is in the counters
 * exactly once, so the contributions of a day's objects add up to its counters.
 *
 * Stored compactly, as text: the metric names once, then one row per (day, account).
 *
 * ```
 * cm  "requests,bytes,authorization_requests"
 * c   "\n2026-11-21\tacme\t155\t4331584\t47\n2026-11-21\tglobex\t12\t5000\t0\n"
 * ```
 *
 * Every row starts with a newline, so `contains(c, "\n<day>\t<account>\t")` finds an
 * account-day's row in a DynamoDB filter without decoding anything.
 *
 * A row of an object counted with hours ends with one more field: its sums by UTC hour
 * (hours.ts), each hour as `<hh>:<value>,<value>...` in the order of `cm`, hours joined
 * by `;`, hours with nothing counted left out:
 *
 * ```
 * c   "\n2026-11-21\tacme\t155\t4331584\t47\t05:100,3000000,40;06:55,1331584,7\n"
 * ```
 *
 * A row without it (counted before hours existed) decodes without `hours`; a reader of
 * the older format reads the values it knows and ignores the field.
 */

export interface Contribution {
  readonly account: string;
  readonly day: string;
  readonly metrics: Readonly<Record<string, number>>;
  /** The same usage by UTC hour of `day`; absent on a row recorded before hours were kept. */
  readonly hours?: HourSums;
}

/** Contributions as two strings (see the module comment). */
export interface EncodedContributions {
  /** Metric names, comma separated, in the order of each row's values. */
  readonly metrics: string;
  /** Rows `\n<day>\t<account>\t<value>...`, ending with a newline; empty when the object counted nothing. */
  readonly rows: string;
}

/** Encodes `rows` (one per account-day); metrics absent from a row are written as 0. */
export function encodeContributions(rows: readonly Contribution[]): EncodedContributions {
  const names = [...new Set(rows.flatMap((row) => [...Object.keys(row.metrics), ...Object.values(row.hours ?? {}).flatMap((sums) => Object.keys(sums))]))];
  const lines = rows.map((row) => {
    const values = `${row.day}\t${row.account}\t${names.map((name) => String(row.metrics[name] ?? 0)).join('\t')}`;
    return row.hours === undefined ? values : `${values}\t${encodeHours(row.hours, names)}`;
  });
  return { metrics: names.join(','), rows: lines.length === 0 ? '' : `\n${lines.join('\n')}\n` };
}

/** `05:100,3000000;06:55,1331584`: each hour with something counted, its values in the order of `names`. */
function encodeHours(hours: HourSums, names: readonly string[]): string {
  return Object.keys(hours)
    .map(Number)
    .sort((a, b) => a - b)
    .filter((hour) => names.some((name) => (hours[hour]?.[name] ?? 0) !== 0))
    .map((hour) => `${String(hour).padStart(2, '0')}:${names.map((name) => String(hours[hour]?.[name] ?? 0)).join(',')}`)
    .join(';');
}

/** Reads what {@link encodeHours} wrote; a part that is not an hour of values is skipped. */
function decodeHours(field: string, names: readonly string[]): HourSums {
  const hours: Record<number, Record<string, number>> = {};
  for (const part of field === '' ? [] : field.split(';')) {
    const [hour = '', values = ''] = part.split(':');
    const at = Number(hour);
    if (!/^\d\d$/.test(hour) || at >= HOURS_PER_DAY) continue;
    const amounts = values.split(',');
    hours[at] = Object.fromEntries(names.map((name, i) => [name, Number(amounts[i] ?? 0)]).filter(([, amount]) => amount !== 0));
  }
  return hours;
}

/** Decodes what {@link encodeContributions} wrote; rows of other days or accounts are kept unless `only` says otherwise. */
export function decodeContributions(encoded: EncodedContributions, only?: { day: string; account: string }): Contribution[] {
  const names = encoded.metrics === '' ? [] : encoded.metrics.split(',');
  const found: Contribution[] = [];
  for (const line of encoded.rows.split('\n')) {
    if (line === '') continue;
    const [day = '', account = '', ...values] = line.split('\t');
    if (only !== undefined && (day !== only.day || account !== only.account)) continue;
    const hours = values[names.length];
    found.push({
      day,
      account,
      metrics: Object.fromEntries(names.map((name, i) => [name, Number(values[i] ?? 0)])),
      ...(hours === undefined ? {} : { hours: decodeHours(hours, names) }),
    });
  }
  return found;
}

/** What a row of `account` on `day` starts with in the encoded rows (a filter's needle). */
export function contributionRowPrefix(day: string, account: string): string {
  return `\n${day}\t${account}\t`;
}

/**
 * The days an object's contributions fall on, its main day first: the day with the
 * most rows (the earliest of a tie). The ledger item is indexed under the main day;
 * each other day gets a small item of its own (an hourly log that crosses midnight).
 */
export function contributionDays(rows: readonly Contribution[]): string[] {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.day, (counts.get(row.day) ?? 0) + 1);
  return [...counts].sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0)).map(([day]) => day);
}

/** Buckets of the source-day index per day: a day's ledger writes spread over this many index partitions. */
export const SOURCE_DAY_BUCKETS = 4;
