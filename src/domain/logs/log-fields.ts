import type { ResolverSpec } from './account-resolver';
import { FieldLayout, fieldKey } from './cloudfront-log';
import { ConfigError } from '../errors';
import type { MetricRule } from './metric-rules';

/**
 * The fields of a CloudFront real-time log record, in the order CloudFront sends them
 * whatever order the configuration lists them in (a record holds the configured subset,
 * in this order, tab-separated, no header).
 */
export const REALTIME_FIELDS = [
  'timestamp', 'c-ip', 'time-to-first-byte', 'sc-status', 'sc-bytes', 'cs-method', 'cs-protocol', 'cs-host',
  'cs-uri-stem', 'cs-bytes', 'x-edge-location', 'x-edge-request-id', 'x-host-header', 'time-taken',
  'cs-protocol-version', 'c-ip-version', 'cs-user-agent', 'cs-referer', 'cs-cookie', 'cs-uri-query',
  'x-edge-response-result-type', 'x-forwarded-for', 'ssl-protocol', 'ssl-cipher', 'x-edge-result-type',
  'fle-encrypted-fields', 'fle-status', 'sc-content-type', 'sc-content-len', 'sc-range-start', 'sc-range-end',
  'c-port', 'x-edge-detailed-result-type', 'c-country', 'cs-accept-encoding', 'cs-accept',
  'cache-behavior-path-pattern', 'cs-headers', 'cs-header-names', 'cs-headers-count',
  'primary-distribution-id', 'primary-distribution-dns-name', 'origin-fbl', 'origin-lbl', 'asn',
] as const;

/** How a log without a header of its own (v2 plain, real-time) is read. */
export interface HeaderlessFields {
  /** `realtime`: a real-time log (its records may be sampled); `plain`: standard logging v2 plain output. */
  readonly preset: 'realtime' | 'plain';
  readonly fields: readonly string[];
}

/** How text logs are read besides what they say themselves. */
export interface LogFormatSettings {
  /** Fields of logs with no header (no `#Fields` line, not JSON); without them such logs are poison. */
  readonly headerless?: HeaderlessFields;
  /** What separates fields on w3c and plain lines: a tab unless the delivery chose otherwise. */
  readonly delimiter?: string;
  /**
   * Percent of requests a real-time log configuration samples (1-100). Below 100 the
   * counts of real-time logs are estimates, kept apart as `estimated_<metric>`.
   */
  readonly samplingRate?: number;
}

export const DEFAULT_DELIMITER = '\t';

/**
 * Parses `TALLY_LOG_FIELDS`: a comma list of the fields of headerless v2 plain logs, in
 * their order, or `realtime:<comma list>`, the fields a real-time log configuration
 * sends. Field names may be written as any format spells them (`cs(Host)`, `cs-host`).
 * Checked here, at cold start: a list without a day field, with a field twice, or (for
 * real-time logs) out of CloudFront's order is refused with the reason.
 *
 * @example parseLogFields('realtime:timestamp,sc-bytes,cs-host').fields // ['timestamp', 'sc-bytes', 'cs-host']
 */
export function parseLogFields(text: string, variable = 'TALLY_LOG_FIELDS'): HeaderlessFields {
  const realtime = /^realtime:/i.test(text.trim());
  const list = realtime ? text.trim().slice('realtime:'.length) : text;
  const fields = list.split(',').map((name) => name.trim()).filter((name) => name.length > 0);
  if (fields.length === 0) throw new ConfigError(`${variable}: no fields named (a comma list, or realtime:<comma list>)`);
  const bad = fields.find((name) => !/^[A-Za-z][A-Za-z0-9()_-]*$/.test(name));
  if (bad !== undefined) throw new ConfigError(`${variable}: "${bad}" is not a field name`);
  const keys = fields.map(fieldKey);
  const twice = fields.find((_, i) => keys.indexOf(keys[i]!) !== i);
  if (twice !== undefined) throw new ConfigError(`${variable}: field "${twice}" is named twice`);
  if (new FieldLayout(fields).daySource === undefined) {
    throw new ConfigError(`${variable}: the fields need a day: date, timestamp(ms) or timestamp`);
  }
  if (realtime) {
    const order = new Map<string, number>(REALTIME_FIELDS.map((name, i) => [fieldKey(name), i]));
    let last = -1;
    let lastName = '';
    for (const name of fields) {
      const position = order.get(fieldKey(name));
      if (position === undefined) continue;
      if (position < last) {
        throw new ConfigError(
          `${variable}: real-time records carry their fields in CloudFront's order, so "${name}" cannot follow "${lastName}" (see docs/log-formats.md)`,
        );
      }
      last = position;
      lastName = name;
    }
  }
  return { preset: realtime ? 'realtime' : 'plain', fields };
}

/**
 * Parses `TALLY_LOG_DELIMITER`: 1 to 5 characters; `\t` and `tab` name a tab.
 *
 * @example parseDelimiter('|') // '|'
 */
export function parseDelimiter(text: string, variable = 'TALLY_LOG_DELIMITER'): string {
  const value = text === 'tab' || text === '\\t' ? '\t' : text;
  if (value.length < 1 || value.length > 5) throw new ConfigError(`${variable} must be 1 to 5 characters (tab: "\\t"), got "${text}"`);
  if (/[\r\n]/.test(value)) throw new ConfigError(`${variable} cannot hold a line break`);
  return value;
}

/**
 * The fields a configured field list lacks for Tally to count with it, each with what
 * needs it: a log read with it would count every line as unattributed, no bytes, or
 * never match a rule, which configuration should refuse rather than bill.
 *
 * @example missingFields(['date', 'cs-uri-stem'], { kind: 'host-label' }, []) // ['x-host-header or cs(Host) (the host-label resolver)', 'sc-bytes (the bytes metric)']
 */
export function missingFields(fields: readonly string[], resolver: ResolverSpec, rules: readonly MetricRule[]): string[] {
  const layout = new FieldLayout(fields);
  const missing = new Map<string, string[]>();
  const need = (names: readonly string[], by: string) => {
    if (names.some((name) => layout.has(name))) return;
    const key = names.join(' or ');
    missing.set(key, [...(missing.get(key) ?? []), by]);
  };
  if (resolver.kind === 'host-label' || resolver.kind === 'host-map') need(['x-host-header', 'cs(Host)'], `the ${resolver.kind} resolver`);
  if (resolver.kind === 'path') need(['cs-uri-stem'], 'the path resolver');
  need(['sc-bytes'], 'the bytes metric');
  for (const rule of rules) {
    if (rule.method !== undefined) need(['cs-method'], `metric rule "${rule.name}"`);
    if (rule.path !== undefined) need(['cs-uri-stem'], `metric rule "${rule.name}"`);
    if (rule.status !== undefined) need(['sc-status'], `metric rule "${rule.name}"`);
  }
  return [...missing].map(([names, by]) => `${names} (${by.join(', ')})`);
}

/** Whether logs read with these settings may be sampled: their counts are then kept as estimates. */
export function countsEstimates(settings: LogFormatSettings | undefined): boolean {
  return settings?.headerless?.preset === 'realtime' && settings.samplingRate !== undefined && settings.samplingRate < 100;
}
