import { ConfigError } from '../errors';
import { isValidAccountId } from '../account-id';
import type { FieldLayout } from './cloudfront-log';
import { parseCloudFrontKey } from './cloudfront-key';
import { ByteKeyCache, NOT_CACHED, type LogLine } from './log-line';

/**
 * How a log line is attributed to an account.
 * - `host-label`: first DNS label of `x-host-header` (else `cs(Host)`), lowercased: `acme.example.com` -> `acme`;
 *   an IP literal or a CloudFront default domain (`d111111abcdef8.cloudfront.net`) is of no account
 * - `host-map`: the full host, lowercased, looked up in a map
 * - `path`: a regular expression with a named group `account` run on the decoded `cs-uri-stem`
 * - `key`: a pattern on the S3 object key; every line of the object gets its account
 * - `distribution`: the CloudFront distribution id, looked up in a map: the line's
 *   `DistributionId` field, else the distribution the object key names
 */
export type ResolverSpec =
  | { readonly kind: 'host-label' }
  | { readonly kind: 'host-map'; readonly hosts: ReadonlyMap<string, string> }
  | { readonly kind: 'path'; readonly pattern: RegExp }
  | { readonly kind: 'key'; readonly pattern: RegExp }
  | { readonly kind: 'distribution'; readonly distributions: ReadonlyMap<string, string> };

/** The resolver forms, as the CLI's help and the errors name them. */
export const RESOLVER_FORMS = 'host-label, host-map:JSON|FILE, path:REGEX, key:PATTERN or distribution:JSON|FILE';

/** Resolver kinds whose argument is a JSON map, given inline or (read by the caller) as a file. */
export const MAP_RESOLVERS: readonly string[] = ['host-map', 'distribution'];

/** Resolves one log line to an account id, or `undefined` when it cannot. */
export type LineResolver = (line: LogLine) => string | undefined;

/**
 * Parses the textual form used by the CLI flag and the `TALLY_RESOLVER` variable.
 * `host-map:` and `distribution:` take inline JSON here; reading a file is the caller's job.
 *
 * @example parseResolverSpec('path:^/t/(?<account>[^/]+)/')
 */
export function parseResolverSpec(text: string): ResolverSpec {
  const colon = text.indexOf(':');
  const kind = colon === -1 ? text : text.slice(0, colon);
  const argument = colon === -1 ? '' : text.slice(colon + 1);
  switch (kind) {
    case 'host-label':
      return { kind: 'host-label' };
    case 'host-map':
      return { kind: 'host-map', hosts: parseAccountMap(argument, 'host-map', 'host', (host) => host.toLowerCase()) };
    case 'distribution':
      return { kind: 'distribution', distributions: parseAccountMap(argument, 'distribution', 'distribution id', distributionKey) };
    case 'path':
      return { kind: 'path', pattern: compileAccountRegex(argument, 'path') };
    case 'key':
      return { kind: 'key', pattern: compileKeyPattern(argument) };
    default:
      throw new ConfigError(`unknown resolver "${text}": use ${RESOLVER_FORMS}`);
  }
}

/** A JSON object of name -> account id, its names normalised by `keyOf`. */
function parseAccountMap(json: string, kind: string, name: string, keyOf: (name: string) => string): ReadonlyMap<string, string> {
  const usage = `${kind} resolver needs a JSON object of ${name} -> account`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw new ConfigError(usage, { cause: error });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(usage);
  const accounts = new Map<string, string>();
  for (const [key, account] of Object.entries(parsed)) {
    if (typeof account !== 'string' || !isValidAccountId(account)) {
      throw new ConfigError(`${kind}: ${name} "${key}" maps to an invalid account id`);
    }
    accounts.set(keyOf(key), account);
  }
  return accounts;
}

/** Distribution ids are upper case; a map or a log may spell them otherwise. */
const distributionKey = (id: string): string => id.toUpperCase();

function compileAccountRegex(source: string, kind: string): RegExp {
  let pattern: RegExp;
  try {
    pattern = new RegExp(source);
  } catch (error) {
    throw new ConfigError(`${kind} resolver: invalid regular expression ${source}`, { cause: error });
  }
  if (!source.includes('(?<account>')) {
    throw new ConfigError(`${kind} resolver: the regular expression needs a named group (?<account>...)`);
  }
  return pattern;
}

/**
 * A key pattern is either a regex with `(?<account>...)` or a template such as
 * `logs/{account}/*`, where `{account}` is one path segment (or the rest of one:
 * `customer={account}`), `*` any text within a segment, `**` any text at all, and `**`
 * followed by a slash any number of whole folders, none included. The template matches
 * from the key's start: `AWSLogs/*` + `/CloudFront/{account}/**` reads a v2 delivery
 * straight under the bucket, and a leading `**` + `/` lets the same template, or a Hive
 * `customer={account}` folder, sit under any log prefix (docs/configuration.md).
 */
function compileKeyPattern(pattern: string): RegExp {
  if (pattern.includes('(?<account>')) return compileAccountRegex(pattern, 'key');
  if (!pattern.includes('{account}')) {
    throw new ConfigError('key resolver: the pattern needs {account} or a named group (?<account>...)');
  }
  const source = pattern
    .split(/(\{account\}|\*\*\/|\*\*|\*)/)
    .map((part) => {
      if (part === '{account}') return '(?<account>[^/]+)';
      if (part === '**/') return '(?:.*/)?';
      if (part === '**') return '.*';
      if (part === '*') return '[^/]*';
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return new RegExp(`^${source}`);
}

/** Account named by the object key, or undefined when the key does not match. */
export function accountFromKey(pattern: RegExp, objectKey: string): string | undefined {
  const account = pattern.exec(objectKey)?.groups?.account;
  return account !== undefined && isValidAccountId(account) ? account : undefined;
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}(:\d+)?$/;

/** Whether a host is an IP literal (IPv4, with or without a port, or an IPv6 literal in brackets). */
export function isIpLiteral(host: string): boolean {
  return host.startsWith('[') || IPV4.test(host);
}

/**
 * The suffix of CloudFront's default domain names (`d111111abcdef8.cloudfront.net`).
 * Such a host names a distribution, not an account: `cs(Host)` always holds it, and so
 * does `x-host-header` when a viewer used the default domain
 * (https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/standard-logs-reference.html).
 */
export const CLOUDFRONT_DEFAULT_DOMAIN = '.cloudfront.net';
const CLOUDFRONT_SUFFIX = /\.cloudfront\.net$/i;
const CLOUDFRONT_SUFFIX_BYTES = new TextEncoder().encode(CLOUDFRONT_DEFAULT_DOMAIN);

/**
 * Whether a host is a CloudFront default domain name: it ends with `.cloudfront.net`,
 * ASCII letters in any case (the regular expression has no `u` flag, so no other
 * character folds to an ASCII one, as the scanner compares bytes: line-scan.wat).
 */
export function isCloudFrontDefaultDomain(host: string): boolean {
  return CLOUDFRONT_SUFFIX.test(host);
}

/** {@link isCloudFrontDefaultDomain} for the host bytes `[start, end)`. */
export function isCloudFrontDefaultDomainBytes(bytes: Uint8Array, start: number, end: number): boolean {
  const suffix = CLOUDFRONT_SUFFIX_BYTES;
  const at = end - suffix.length;
  if (at < start) return false;
  for (let i = 0; i < suffix.length; i++) {
    const expected = suffix[i]!;
    const actual = bytes[at + i]!;
    // Letters match either case; the dots exactly.
    if (actual !== expected && !(expected !== 46 && (actual | 0x20) === expected)) return false;
  }
  return true;
}

/**
 * Why the host resolvers could not attribute a host (a sample of `unattributedSamples`),
 * for ingestion health and `tally count`.
 */
export function missedHostReason(host: string): string {
  if (isIpLiteral(host)) return 'an IP address, not a host name';
  if (isCloudFrontDefaultDomain(host)) return 'the CloudFront default domain: it names a distribution, not an account';
  return 'not an account (no valid account id, or not in the host map)';
}

/**
 * First DNS label of a host name. IP literals have none, and a CloudFront default
 * domain's label names a distribution: both attribute to no account.
 */
function firstLabel(host: string): string | undefined {
  if (isIpLiteral(host) || isCloudFrontDefaultDomain(host)) return undefined;
  const dot = host.indexOf('.');
  return (dot === -1 ? host : host.slice(0, dot)).toLowerCase();
}

function validOrUndefined(account: string | undefined): string | undefined {
  return account !== undefined && isValidAccountId(account) ? account : undefined;
}

/** Distinct host labels (or hosts) remembered per resolver before the memory is cleared. */
const HOST_CACHE_LIMIT = 4096;

/**
 * Builds the resolver for one `#Fields` layout. Recompiled whenever the header
 * changes. The host resolvers remember each distinct host label (or host) by its bytes,
 * so most lines resolve without a string being made; the others read the column's text.
 */
export function compileResolver(spec: ResolverSpec, layout: FieldLayout, objectKey: string): LineResolver {
  // Only the host resolvers look the host columns up, so other resolvers leave them unsplit.
  const byHost = spec.kind === 'host-label' || spec.kind === 'host-map';
  const xHost = byHost ? layout.index('x-host-header') : undefined;
  const host = byHost ? layout.index('cs(Host)') : undefined;
  /** The column holding the viewer's host (`x-host-header`, else `cs(Host)`), or -1. */
  const viewerHost = (line: LogLine): number => {
    if (xHost !== undefined && line.present(xHost)) return xHost;
    return host !== undefined && line.present(host) ? host : -1;
  };
  switch (spec.kind) {
    case 'host-label': {
      // A log holds few distinct labels: remember each one's account (or none), keyed
      // by the short label rather than the whole host. A host starting with a digit
      // or "[" may be an IP literal and takes the full path.
      const known = new ByteKeyCache<string | undefined>(HOST_CACHE_LIMIT);
      return (line) => {
        const column = viewerHost(line);
        if (column === -1) return undefined;
        const bytes = line.bytes;
        const start = line.starts[column]!;
        const end = line.ends[column]!;
        const first = bytes[start]!;
        if ((first >= 48 && first <= 57) || first === 91) return validOrUndefined(firstLabel(line.field(column)));
        let dot = start;
        while (dot < end && bytes[dot] !== 46 /* . */) dot++;
        // The label is remembered alone: a default domain is told by the rest of the host.
        if (end - dot === CLOUDFRONT_SUFFIX_BYTES.length && isCloudFrontDefaultDomainBytes(bytes, start, end)) return undefined;
        const entry = known.find(bytes, start, dot);
        if (entry !== NOT_CACHED) return known.value(entry);
        const account = validOrUndefined(line.decode(start, dot).toLowerCase());
        known.add(bytes, start, dot, account);
        return account;
      };
    }
    case 'host-map': {
      const known = new ByteKeyCache<string | undefined>(HOST_CACHE_LIMIT);
      return (line) => {
        const column = viewerHost(line);
        if (column === -1) return undefined;
        const start = line.starts[column]!;
        const end = line.ends[column]!;
        const entry = known.find(line.bytes, start, end);
        if (entry !== NOT_CACHED) return known.value(entry);
        const account = spec.hosts.get(line.field(column).toLowerCase());
        known.add(line.bytes, start, end, account);
        return account;
      };
    }
    case 'path': {
      const stem = layout.index('cs-uri-stem');
      return (line) => {
        if (stem === undefined || !line.present(stem)) return undefined;
        return validOrUndefined(spec.pattern.exec(decodeField(line.field(stem)))?.groups?.account);
      };
    }
    case 'key': {
      const account = accountFromKey(spec.pattern, objectKey);
      return () => account;
    }
    case 'distribution': {
      // Lines name their distribution when the layout has DistributionId (v2 and
      // real-time logs may); a line without one takes the distribution of its object.
      const keyDistribution = parseCloudFrontKey(objectKey)?.distribution;
      const ofObject = keyDistribution === undefined ? undefined : spec.distributions.get(distributionKey(keyDistribution));
      const column = layout.index('DistributionId');
      if (column === undefined) return () => ofObject;
      const known = new ByteKeyCache<string | undefined>(HOST_CACHE_LIMIT);
      return (line) => {
        if (!line.present(column)) return ofObject;
        const start = line.starts[column]!;
        const end = line.ends[column]!;
        const entry = known.find(line.bytes, start, end);
        if (entry !== NOT_CACHED) return known.value(entry);
        const account = spec.distributions.get(distributionKey(line.field(column)));
        known.add(line.bytes, start, end, account);
        return account;
      };
    }
  }
}

/**
 * For the host resolvers, whose answer depends on a few bytes of the line only: which
 * bytes (the host label or the whole host, of x-host-header else cs(Host), the first
 * present) and the account they give. The scanner looks these keys up itself
 * (`ScanKey` in line-scanner.ts), so that most lines are resolved without a string; a
 * line whose key it cannot take (a host in the last column of a CRLF line) goes through the {@link compileResolver} resolver, which answers the same.
 */
export interface ResolverKey {
  readonly kind: 'label' | 'host';
  /** The x-host-header and cs(Host) columns, -1 when the layout lacks one. */
  readonly columns: readonly [number, number];
  /** The account of a key's text (a label, the scanner having set IP literals and CloudFront default domains apart; a host). */
  readonly accountOf: (key: string) => string | undefined;
}

/** The key of the host resolvers for a layout, or undefined for the others. */
export function resolverKey(spec: ResolverSpec, layout: FieldLayout): ResolverKey | undefined {
  if (spec.kind !== 'host-label' && spec.kind !== 'host-map') return undefined;
  const columns = [layout.index('x-host-header') ?? -1, layout.index('cs(Host)') ?? -1] as const;
  // The scanner keys an IP literal and a CloudFront default domain by the whole host: of no account.
  if (spec.kind === 'host-label') return { kind: 'label', columns, accountOf: (label) => validOrUndefined(firstLabel(label)) };
  return { kind: 'host', columns, accountOf: (host) => spec.hosts.get(host.toLowerCase()) };
}

/** URL-decodes a log field; a broken escape leaves the raw text rather than failing the line. */
export function decodeField(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
