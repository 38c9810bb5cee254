import { ConfigError } from './errors';
import { isShardMetric } from './keys';
import { decodeField } from './account-resolver';
import type { FieldLayout } from './cloudfront-log';

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

/** What a metric may be called: it becomes a DynamoDB attribute name and a report column. */
export const METRIC_NAME = /^[a-z][a-z0-9_]{0,39}$/;
const BASE: ReadonlySet<string> = new Set(BASE_METRICS);

/** Validates rules from configuration, naming the first problem found. */
export function validateMetricRules(input: unknown): MetricRule[] {
  if (!Array.isArray(input)) throw new ConfigError('metric rules must be a JSON array');
  const names = new Set<string>();
  return input.map((raw, position): MetricRule => {
    if (typeof raw !== 'object' || raw === null) throw new ConfigError(`metric rule ${position} is not an object`);
    const rule = raw as Record<string, unknown>;
    const name = rule.name;
    if (typeof name !== 'string' || !METRIC_NAME.test(name)) {
      throw new ConfigError(`metric rule ${position}: name must match ${METRIC_NAME.source}`);
    }
    if (BASE.has(name) || !isShardMetric(name) || names.has(name)) {
      throw new ConfigError(`metric rule ${position}: name "${name}" is reserved or repeated`);
    }
    names.add(name);
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

/** Names of all metrics, base first, in the order values are reported. */
export function metricNames(rules: readonly MetricRule[]): string[] {
  return [...BASE_METRICS, ...rules.map((rule) => rule.name)];
}

/** Adds one line's values for the configured rules into `values` (offset past the base metrics). */
export type RuleEvaluator = (fields: readonly string[], bytes: number, values: number[]) => void;

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
  const tests = rules.map((rule) => {
    const path = rule.path === undefined ? undefined : globToRegExp(rule.path);
    const statusPrefix = rule.status?.endsWith('xx') ? rule.status[0] : undefined;
    return (fields: readonly string[]): boolean => {
      if (rule.method !== undefined && (method === undefined || fields[method] !== rule.method)) return false;
      if (path !== undefined) {
        const value = stem === undefined ? undefined : fields[stem];
        if (value === undefined || !path.test(decodeField(value))) return false;
      }
      if (rule.status !== undefined) {
        const value = status === undefined ? undefined : fields[status];
        if (value === undefined) return false;
        if (statusPrefix !== undefined ? value[0] !== statusPrefix || value.length !== 3 : value !== rule.status) {
          return false;
        }
      }
      return true;
    };
  });
  const byBytes = rules.map((rule) => rule.value === 'bytes');
  const base = BASE_METRICS.length;
  return (fields, bytes, values) => {
    for (let i = 0; i < tests.length; i++) {
      if (tests[i]!(fields)) values[base + i] = (values[base + i] ?? 0) + (byBytes[i] ? bytes : 1);
    }
  };
}
