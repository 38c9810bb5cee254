import fc from 'fast-check';
import { parseResolverSpec } from '../../src/domain/logs/account-resolver';
import { isValidDay } from '../../src/domain/days';
import { LogCounter } from '../../src/domain/logs/log-counter';
import { metricNames, validateMetricRules } from '../../src/domain/logs/metric-rules';
import { compileResolver, compileRules, FieldLayout, isValidTime, parseByteCount } from '../support/reference-log-counter';
import { UNATTRIBUTED } from '../../src/domain/account-id';
import { UsageTally } from '../../src/domain/logs/usage-tally';

/**
 * The counter finds only the columns something reads and checks date, time and
 * sc-bytes on the bytes. This property holds it to the plain rule it replaced: split
 * the whole line on tabs and judge the fields (with the string resolvers and rules of
 * the counter before it, kept in test/support/reference-log-counter.ts).
 */
// Columns nobody reads, so that long runs of them are skipped in one step.
const PADDING = Array.from({ length: 14 }, (_, i) => `pad${i}`);
const FIELDS = ['date', 'time', 'sc-bytes', 'cs-method', 'cs(Host)', 'cs-uri-stem', 'sc-status', 'x-host-header', 'extra', ...PADDING];
const rules = validateMetricRules([
  { name: 'authorization_requests', path: '/api/authorization/*' },
  { name: 'posts', method: 'POST' },
  { name: 'errors_bytes', status: '5xx', value: 'bytes' },
]);

const VALUES: Record<string, string[]> = {
  date: ['2026-11-21', '2026-11-22', '2026-02-30', '', '2026-1-01', 'x'],
  time: ['12:00:00', '23:59:60', '00:59:59', '07:00:01', '24:00:00', '1:00:00', '', '12:00'],
  'sc-bytes': ['0', '1234', '-', '', '12a', '1234567890123456', '999999999999999'],
  'cs-method': ['GET', 'POST', 'post', ''],
  'cs(Host)': ['d1.cloudfront.net', 'ACME.example.com', '-', ''],
  'cs-uri-stem': ['/api/authorization/check', '/api/%61uthorization/x', '/v1/items', '-', '%E0%A4%A'],
  'sc-status': ['200', '503', '5000', ''],
  'x-host-header': ['acme.api.example.com', 'Globex.example.com', '10.0.0.1', '[::1]', '-', '', 'bad#host.example.com'],
  extra: ['x', ''],
  ...Object.fromEntries(PADDING.map((name) => [name, ['x', '', 'a b', '-']])),
};

const layoutArb = fc.shuffledSubarray(FIELDS, { minLength: 1 }).filter((fields) => fields.includes('date'));
// Field counts near the layout's width matter most: one short is malformed, one extra is not.
const lineArb = (width: number) =>
  fc.tuple(
    fc.oneof(fc.integer({ min: 1, max: width + 2 }), fc.constantFrom(Math.max(1, width - 1), width, width + 1)),
    fc.array(fc.nat(), { minLength: width + 2, maxLength: width + 2 }),
  );

/** The rule the counter must keep: split everything, then judge the fields by name. */
function reference(layoutFields: string[], lines: string[]) {
  const layout = new FieldLayout(layoutFields);
  const resolve = compileResolver(parseResolverSpec('host-label'), layout, 'key');
  const evaluate = compileRules(rules, layout);
  const at = (name: string) => layoutFields.indexOf(name);
  const tally = new UsageTally(metricNames(rules));
  const counts = { read: 0, counted: 0, unattributed: 0, malformed: 0 };
  for (const line of lines) {
    if (line.length === 0) continue; // a blank line is not a data line
    counts.read++;
    const fields = line.split('\t');
    if (fields.length < layoutFields.length) { counts.malformed++; continue; }
    const day = fields[at('date')]!;
    if (!isValidDay(day)) { counts.malformed++; continue; }
    if (at('time') !== -1 && !isValidTime(fields[at('time')]!)) { counts.malformed++; continue; }
    const bytes = at('sc-bytes') === -1 ? 0 : parseByteCount(fields[at('sc-bytes')]!);
    if (bytes < 0) { counts.malformed++; continue; }
    const values = [1, bytes, 0, 0, 0];
    evaluate(fields, bytes, values);
    const account = resolve(fields);
    if (account === undefined) counts.unattributed++;
    else counts.counted++;
    // Its UTC hour: the time's first two digits; with no time field, the day only.
    const row = tally.row(account ?? UNATTRIBUTED, day);
    if (at('time') === -1) tally.addTo(row, values);
    else tally.addAt(row, Number(fields[at('time')]!.slice(0, 2)), values);
  }
  return { counts, usage: tally.usage() };
}

describe('the parser fast path', () => {
  it('counts every line exactly as splitting the whole line would', () => {
    fc.assert(
      fc.property(
        layoutArb.chain((layout) => fc.tuple(fc.constant(layout), fc.array(lineArb(layout.length), { maxLength: 30 }))),
        ([layout, specs]) => {
          const lines = specs.map(([fieldCount, picks]) =>
            Array.from({ length: fieldCount }, (_, i) => {
              const pool = VALUES[layout[i] ?? 'extra']!;
              return pool[picks[i]! % pool.length]!;
            }).join('\t'),
          );
          const counter = new LogCounter({ resolver: parseResolverSpec('host-label'), metricRules: rules, objectKey: 'key' });
          counter.write(Buffer.from(`#Fields: ${layout.join(' ')}\n${lines.map((line) => `${line}\n`).join('')}`));
          counter.finish('key');
          const expected = reference(layout, lines);

          expect(counter.lines).toEqual(expected.counts);
          expect(counter.tally.usage()).toEqual(expected.usage);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('counts a line one field short of a wide layout as malformed, and one with extra fields as good', () => {
    const counter = new LogCounter({ resolver: parseResolverSpec('host-label'), metricRules: [], objectKey: 'key' });
    const padding = Array.from({ length: 20 }, (_, i) => `pad${i}`);
    const good = ['2026-11-21', '12:00:00', '5', 'acme.example.com', ...padding.map(() => 'x')];

    counter.write(Buffer.from(`#Fields: date time sc-bytes x-host-header ${padding.join(' ')}\n`));
    counter.write(Buffer.from(`${good.join('\t')}\n${good.slice(0, -1).join('\t')}\n${[...good, 'extra'].join('\t')}\n`));

    const count = counter.finish('x');

    expect(count.lines).toEqual({ read: 3, counted: 2, unattributed: 0, malformed: 1 });
    expect(count.malformedSamples[0]?.reason).toBe('23 fields where #Fields names 24');
  });

  it('counts a line with an empty date as malformed, even as the first line', () => {
    const counter = new LogCounter({ resolver: parseResolverSpec('host-label'), metricRules: [], objectKey: 'key' });

    counter.write(Buffer.from('#Fields: date time x-host-header\n\t12:00:00\tacme.example.com\n2026-11-21\t12:00:00\tacme.example.com\n\t12:00:00\tacme.example.com\n'));
    counter.finish('x');

    expect(counter.lines).toEqual({ read: 3, counted: 1, unattributed: 0, malformed: 2 });
  });
});
