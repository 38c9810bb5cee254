/**
 * How the dashboard writes numbers, byte sizes and UTC days. Pure (no DOM), so jest
 * tests it directly; the build compiles it to `lib/format.js` for the browser.
 */

const METRIC_LABELS: Readonly<Record<string, string>> = { requests: 'Requests', bytes: 'Bytes' };
/** The prefix of metrics that hold estimates (see estimatedMetric in src/domain/logs/metric-rules.ts). */
const ESTIMATED = 'estimated_';
const BYTE_UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'] as const;
const exactFormat = new Intl.NumberFormat('en-US');
const compactFormat = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

/** The heading of a metric: `bytes` → `Bytes`, `authorization_requests` → `Authorization requests`. */
export function metricLabel(name: string): string {
  // Counts of sampled real-time logs, scaled up: never shown as if they were exact.
  if (name.startsWith(ESTIMATED)) return `${metricLabel(name.slice(ESTIMATED.length))} (estimated from sampled logs)`;
  const known = METRIC_LABELS[name];
  if (known !== undefined) return known;
  const words = name.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Every digit, grouped: `1734221` → `1,734,221`. */
export function exactNumber(n: number): string {
  return exactFormat.format(n);
}

/**
 * A byte count in decimal (SI) units with at most one decimal, as storage bills are
 * written: `1734221` → `1.7 MB`, `2_300_000_000` → `2.3 GB`, `999` → `999 B`.
 */
export function humanBytes(n: number): string {
  let value = Math.abs(n);
  let unit = 0;
  while (value >= 1000 && unit < BYTE_UNITS.length - 1) {
    value /= 1000;
    unit++;
  }
  // 999.96 KB would print as "1000.0 KB": carry into the next unit instead.
  if (unit > 0 && unit < BYTE_UNITS.length - 1 && Number(value.toFixed(value < 100 ? 1 : 0)) >= 1000) {
    value /= 1000;
    unit++;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  const text = value.toFixed(digits).replace(/\.0$/, '');
  return `${n < 0 ? '-' : ''}${text} ${BYTE_UNITS[unit]}`;
}

/** Whether a metric counts bytes (`bytes`, or its estimate). */
function isByteMetric(metric: string): boolean {
  return metric === 'bytes' || metric === `${ESTIMATED}bytes`;
}

/** A value as the cards and the table show it: bytes in units, counts with every digit. */
export function readableValue(n: number, metric: string): string {
  return isByteMetric(metric) ? humanBytes(n) : exactNumber(n);
}

/** The same with a sign, for changes: `+1.2 KB`, `-12`. */
export function signedValue(n: number, metric: string): string {
  return (n > 0 ? '+' : '') + readableValue(n, metric);
}

/** The exact value behind a readable one, for a hover title: `1,734,221 bytes`. */
export function exactTitle(n: number, metric: string): string {
  return `${exactNumber(n)} ${isByteMetric(metric) ? 'bytes' : metricLabel(metric).toLowerCase()}`;
}

/** A short axis label: `12K`, `1.2M`, or bytes in units. */
export function axisValue(n: number, metric: string): string {
  return isByteMetric(metric) ? humanBytes(n) : compactFormat.format(n);
}

const utcDate = (day: string): Date => new Date(`${day}T00:00:00Z`);

/** `2026-01-08` → `Thu, Jan 8, 2026`. */
export function longDay(day: string): string {
  return utcDate(day).toLocaleDateString('en-US', { weekday: 'short', month: 'short', day: 'numeric', year: 'numeric', timeZone: 'UTC' });
}

/** `2026-01-08` → `Jan 8`. */
export function shortDay(day: string): string {
  return utcDate(day).toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
}

/** `2026-01-08` → `Thu`. */
export function weekday(day: string): string {
  return utcDate(day).toLocaleDateString('en-US', { weekday: 'short', timeZone: 'UTC' });
}

/** `2026-01` → `January 2026`. */
export function monthName(month: string): string {
  return utcDate(`${month}-01`).toLocaleDateString('en-US', { month: 'long', year: 'numeric', timeZone: 'UTC' });
}

/** An instant in UTC, minutes precision: `Jan 8, 14:05 UTC`. */
export function utcTime(iso: string): string {
  const text = new Date(iso).toLocaleString('en-US', {
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    hour12: false,
    timeZone: 'UTC',
  });
  return `${text} UTC`;
}

/** How long ago `iso` was, roughly: `just now`, `5 min ago`, `3 h ago`, `4 days ago`. */
export function relativeTime(iso: string, now: number): string {
  const seconds = Math.round((now - Date.parse(iso)) / 1000);
  if (seconds < 45) return 'just now';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.round(hours / 24)} days ago`;
}
