import { ConfigError } from '../errors';
import { SHARD_ATTRIBUTES, isShardMetric } from '../counters/keys';
import { metricCode } from '../hours';
import { decodeField } from './account-resolver';
import type { FieldLayout } from './cloudfront-log';
import type { LogLine } from './log-line';

/** The metrics every line feeds. */
export const BASE_METRICS = ['requests', 'bytes'] as const;

/**
 * A configured billable metric: counts the lines that match every given condition.
 *
 * @example { "name": "authorization_requests", "path": "/api/authorization/*" }
 * @example { "name": "egress_4xx_bytes", "status": "4xx", "value": "bytes" }
 */
export interface MetricRule {
  readonly name: string;
  /** HTTP method, e.g. `POST`. */
  readonly method?: string;
  /** Glob on the decoded `cs-uri-stem`; `*` matches any text. */
  readonly path?: string;
  /** Status class `2xx`..`5xx` or one exact status such as `429`. */
  readonly status?: string;
  /** What a matching line adds: 1 (`requests`, the default) or its `sc-bytes`. */
  readonly value?: 'requests' | 'bytes';
}

/**
 * What a metric may be called: it becomes a DynamoDB attribute name and a report column.
 * Not `constructor`, the one name of this form every object has (Object.prototype's):
 * where metrics are a plain object, a metric of that name missing from it read as the
 * Object function, and `tally count --granularity hour` printed it as null.
 */
export const METRIC_NAME = /^(?!constructor$)[a-z][a-z0-9_]{0,39}$/;
const BASE: ReadonlySet<string> = new Set(BASE_METRICS);
/**
 * The other names a usage shard holds, which a reader also tries when it decodes an hour
 * code (hours.ts): its attributes and the base metrics and their estimates.
 */
function shardNames(): string[] {
  return ['ttl', ...Object.values(SHARD_ATTRIBUTES), ...BASE_METRICS, ...BASE_METRICS.map(estimatedMetric)];
}

/** Validates rules from configuration, naming the first problem found. */
export function validateMetricRules(input: unknown): MetricRule[] {
  if (!Array.isArray(input)) throw new ConfigError('metric rules must be a JSON array');
  const names = new Set<string>();
  // A configured metric's hours are named by a code of its name (hours.ts): two names with one code would add to the same hours.
  const coded = new Map(shardNames().map((name) => [metricCode(name), name]));
  return input.map((raw, position): MetricRule => {
    if (typeof raw !== 'object' || raw === null) throw new ConfigError(`metric rule ${position} is not an object`);
    const rule = raw as Record<string, unknown>;
    const name = rule.name;
    if (typeof name !== 'string' || !METRIC_NAME.test(name)) {
      throw new ConfigError(`metric rule ${position}: name must match ${METRIC_NAME.source}`);
    }
    if (BASE.has(name) || !isShardMetric(name) || names.has(name) || name.startsWith(ESTIMATED_PREFIX)) {
      throw new ConfigError(`metric rule ${position}: name "${name}" is reserved or repeated`);
    }
    names.add(name);
    // The metric and its estimate (sampled real-time logs) each have hours.
    for (const shardName of [name, estimatedMetric(name)]) {
      const clash = coded.get(metricCode(shardName));
      if (clash !== undefined) {
        throw new ConfigError(`metric rule "${name}": the hours of "${shardName}" would share the code ${metricCode(shardName)} with "${clash}" (hours are named by a digest of the name); rename one`);
      }
      coded.set(metricCode(shardName), shardName);
    }
    for (const field of ['method', 'path', 'status'] as const) {
      if (rule[field] !== undefined && typeof rule[field] !== 'string') {
        throw new ConfigError(`metric rule "${name}": ${field} must be a string`);
      }
    }
    if (rule.status !== undefined && !/^[1-5](xx|\d\d)$/.test(String(rule.status))) {
      throw new ConfigError(`metric rule "${name}": status must look like 2xx or 429`);
    }
    if (rule.value !== undefined && rule.value !== 'requests' && rule.value !== 'bytes') {
      throw new ConfigError(`metric rule "${name}": value must be "requests" or "bytes"`);
    }
    return rule as unknown as MetricRule;
  });
}

/** The prefix of metrics that hold estimates from sampled real-time logs (`estimated_requests`). */
export const ESTIMATED_PREFIX = 'estimated_';

/** The name under which an estimate of `metric` (from sampled real-time logs) is kept. */
export function estimatedMetric(metric: string): string {
  return `${ESTIMATED_PREFIX}${metric}`;
}

/**
 * Names of all metrics, base first, in the order values are reported. With `estimates`
 * (a sampled real-time log source is configured), each has an `estimated_` twin after
 * them, holding what sampled logs measured, scaled up, apart from exact counts.
 */
export function metricNames(rules: readonly MetricRule[], options: { estimates?: boolean } = {}): string[] {
  const names = [...BASE_METRICS, ...rules.map((rule) => rule.name)];
  return options.estimates === true ? [...names, ...names.map(estimatedMetric)] : names;
}

/** Adds one line's values for the configured rules into `values` (offset past the base metrics). */
export type RuleEvaluator = (line: LogLine, bytes: number, values: number[]) => void;

function globToRegExp(glob: string): RegExp {
  const source = glob
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`);
}

/** Compiles the rules against one `#Fields` layout. */
export function compileRules(rules: readonly MetricRule[], layout: FieldLayout): RuleEvaluator {
  // A column no rule tests is not looked up, so the parser need not split it out.
  const column = (field: string, used: boolean) => (used ? layout.index(field) : undefined);
  const method = column('cs-method', rules.some((rule) => rule.method !== undefined));
  const stem = column('cs-uri-stem', rules.some((rule) => rule.path !== undefined));
  const status = column('sc-status', rules.some((rule) => rule.status !== undefined));
  const tests = rules.map((rule): ((line: LogLine) => boolean) => {
    const methodIs = rule.method === undefined ? undefined : textMatcher(rule.method);
    const pathIs = rule.path === undefined ? undefined : pathMatcher(rule.path);
    const statusIs = rule.status === undefined ? undefined : statusMatcher(rule.status);
    return (line) => {
      if (methodIs !== undefined && (method === undefined || !methodIs(line, method))) return false;
      if (pathIs !== undefined && (stem === undefined || !pathIs(line, stem))) return false;
      if (statusIs !== undefined && (status === undefined || !statusIs(line, status))) return false;
      return true;
    };
  });
  const byBytes = rules.map((rule) => rule.value === 'bytes');
  const base = BASE_METRICS.length;
  return (line, bytes, values) => {
    for (let i = 0; i < tests.length; i++) {
      if (tests[i]!(line)) values[base + i] = (values[base + i] ?? 0) + (byBytes[i] ? bytes : 1);
    }
  };
}

type ColumnTest = (line: LogLine, column: number) => boolean;

/** A string that UTF-8 encodes one to one: no lone surrogate, no U+FFFD (what invalid bytes decode to). */
function encodesExactly(text: string): boolean {
  return !/[\uD800-\uDFFF\uFFFD]/.test(text.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''));
}

/**
 * The column's text equals `expected`. Compared as bytes: UTF-8 maps well-formed text
 * to bytes one to one, and a column with invalid bytes decodes to U+FFFD, which such
 * text does not contain.
 */
function textMatcher(expected: string): ColumnTest {
  if (!encodesExactly(expected)) return (line, column) => line.field(column) === expected;
  const encoded = new Uint8Array(Buffer.from(expected, 'utf8'));
  return (line, column) => line.equals(column, encoded);
}

/** `2xx` (three characters, the first given) or one exact status such as `429`. */
function statusMatcher(status: string): ColumnTest {
  if (!status.endsWith('xx')) return textMatcher(status);
  const first = status.charCodeAt(0);
  return (line, column) => {
    const start = line.starts[column]!;
    if (line.bytes[start] !== first) return false;
    // Characters, not bytes, as the string rule counted them: decode unless all ASCII.
    if (line.ascii(column)) return line.ends[column]! - start === 3;
    return line.field(column).length === 3;
  };
}

/**
 * A glob on the URL-decoded `cs-uri-stem`. A stem of plain ASCII with no `%` (nothing to
 * decode) and no CR (which `.` does not match) is matched on its bytes, part by part;
 * anything else goes through the regular expression on the decoded text, as always.
 */
function pathMatcher(glob: string): ColumnTest {
  const regex = globToRegExp(glob);
  const byText: ColumnTest = (line, column) => regex.test(decodeField(line.field(column)));
  if (!/^[\x00-\x7f]*$/.test(glob) || /[\r\n]/.test(glob)) return byText;
  const parts = glob.split('*').map((part) => new Uint8Array(Buffer.from(part, 'latin1')));
  return (line, column) => {
    const bytes = line.bytes;
    const start = line.starts[column]!;
    const end = line.ends[column]!;
    for (let i = start; i < end; i++) {
      const byte = bytes[i]!;
      if (byte >= 0x80 || byte === 37 /* % */ || byte === 13 /* CR */) return byText(line, column);
    }
    return globMatches(bytes, start, end, parts);
  };
}

/** `^p0.*p1.*...pn$` on bytes: the first and last parts anchor, the middle ones are found leftmost, in order. */
function globMatches(bytes: Uint8Array, start: number, end: number, parts: readonly Uint8Array[]): boolean {
  const first = parts[0]!;
  if (parts.length === 1) return end - start === first.length && occursAt(bytes, start, first);
  const last = parts[parts.length - 1]!;
  if (end - start < first.length + last.length) return false;
  if (!occursAt(bytes, start, first) || !occursAt(bytes, end - last.length, last)) return false;
  let from = start + first.length;
  const limit = end - last.length;
  for (let p = 1; p < parts.length - 1; p++) {
    const part = parts[p]!;
    let at = from;
    while (at + part.length <= limit && !occursAt(bytes, at, part)) at++;
    if (at + part.length > limit) return false;
    from = at + part.length;
  }
  return true;
}

function occursAt(bytes: Uint8Array, at: number, part: Uint8Array): boolean {
  for (let i = 0; i < part.length; i++) if (bytes[at + i] !== part[i]) return false;
  return true;
}

/**
 * One rule in words, for the console: what it adds and which lines it matches.
 *
 * @example describeMetricRule({ name: 'authorization_requests', path: '/api/authorization/*' })
 * // 'authorization_requests = requests with path /api/authorization/*'
 */
export function describeMetricRule(rule: MetricRule): string {
  const conditions = [
    ...(rule.method === undefined ? [] : [`method ${rule.method}`]),
    ...(rule.path === undefined ? [] : [`path ${rule.path}`]),
    ...(rule.status === undefined ? [] : [`status ${rule.status}`]),
  ];
  return `${rule.name} = ${rule.value === 'bytes' ? 'sc-bytes' : 'requests'} ${conditions.length === 0 ? 'of every line' : `with ${conditions.join(', ')}`}`;
}
