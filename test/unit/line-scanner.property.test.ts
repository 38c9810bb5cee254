import fc from 'fast-check';
import { BYTES_OK, LineScanner, type ScanLayout } from '../../src/domain/logs/line-scanner';

/** Bytes that decide a scan (tab, newline, CR, '#', '-', digits, ':', '.') and a few that do not. */
const BYTE = fc.constantFrom(9, 9, 9, 10, 13, 35, 45, 46, 48, 50, 49, 58, 97, 98, 91);
const FIELD = fc.oneof(
  fc.constantFrom('2026-11-21', '2026-11-20', '12:34:56', '24:00:00', '23:59:60', '23:59:61', '09:60:00', '1a:00:00', '12:34:5/', '12-34-56', 'tenant08.api.example.com', 'TENANT08', '-', '0', '1234', 'acme.cdn.test', 'globex.cdn.test', '10.0.0.1', ''),
  // Hosts that are IP literals, and digit-first hosts that are not.
  fc.constantFrom('10.0.0.1:443', '255.255.255.255', '[::1]', '[2001:db8::1]:80', '1234.5.6.7', '1.2.3', '1.2.3.4.5', '1.2.3.4:', '1.2.3.4:8a', '01.2.3.4', '9tenant.cdn.test', '1.2.3.4:0'),
  // CloudFront default domains (keyed by the whole host, like an IP literal) and hosts that only look like one.
  fc.constantFrom('d111111abcdef8.cloudfront.net', 'D2.CLOUDFRONT.NET', 'acme.cloudfront.net', 'a-label-longer-than-sixteen.cloudfront.net', 'acme.cloudfront.net.x', 'acme.cloudfront\u000enet', 'acme.cloudfront.ne', 'cloudfront.net'),
  // Byte counts of every length around the 8 read at once, and the bytes either side of '0'-'9'.
  fc.constantFrom('12345678', '99999999', '123456789', '00000007', '1234567/', '1234567:', '/', ':', '8', '98765432109876', '1\u00b9'),
  fc.string({ maxLength: 70 }).map((text) => text.replace(/[\t\n]/g, 'x')),
);
/**
 * Lines that fit the first two layouts below, mostly good (a day of the three, a time,
 * a byte count, a known key or not), so that lines are summed on either day, counted
 * malformed, or stop a scan at a new day.
 */
const FITTING = fc
  .record({
    day: fc.constantFrom('2026-11-21', '2026-11-20', '2026-11-19'),
    time: fc.constantFrom('12:34:56', '12:34:56', '24:00:00'),
    bytes: fc.constantFrom('1234', '-', '98765432109876', 'x1'),
    host: fc.constantFrom('acme.cdn.test', 'tenant08.api.example.com', 'initech.cdn.test', '10.0.0.1', '-', 'acme.cloudfront.net', 'd1.cloudfront.net'),
    cr: fc.boolean(),
    wide: fc.boolean(),
  })
  .map(({ day, time, bytes, host, cr, wide }) =>
    Buffer.from(`${wide ? [day, time, 'x', bytes, 'x', host, 'x', 'x', host].join('\t') : [day, time, host].join('\t')}${cr ? '\r' : ''}\n`, 'latin1'),
  );
/** Lines of 1 to 12 fields, or arbitrary bytes: fields and lines land at every offset of a 32-byte block. */
const LINE = fc.oneof(
  fc.array(FIELD, { minLength: 1, maxLength: 12 }).map((fields) => Buffer.from(`${fields.join('\t')}\n`, 'latin1')),
  fc.array(BYTE, { maxLength: 90 }).map((bytes) => Buffer.from([...bytes.filter((byte) => byte !== 10), 10])),
  FITTING,
  FITTING,
);
const LAYOUT = fc.constantFrom<ScanLayout>(
  { columns: [0, 1, 3, 5, 8], width: 9, date: 0, time: 1, bytes: 3, key: { kind: 'label', columns: [8, 5] } },
  { columns: [2, 0, 1], width: 3, date: 0, time: 1, bytes: 2, key: { kind: 'host', columns: [-1, 2] } },
  { columns: [0, 11], width: 12, date: 0, time: -1, bytes: -1 },
  { columns: [], width: 4, date: -1, time: -1, bytes: -1 },
);

/** The scanner's switches a counter sets: a second day, stopping at a new day, counting malformed lines. */
interface Switches {
  readonly summing: boolean;
  readonly ipKey: boolean;
  readonly secondDay: boolean;
  readonly stopAtNewDay: boolean;
  readonly countingMalformed: boolean;
}

/**
 * What a scan leaves: where it stopped, its records, the day of the last line summed
 * after them, the summed lines per day and key id and their bytes, the malformed lines counted.
 */
function scanned(engine: 'wasm' | 'js', text: Buffer, offset: number, layout: ScanLayout, switches: Switches) {
  const { summing, ipKey } = switches;
  const scanner = new LineScanner(4096, engine);
  scanner.setLayout(layout);
  scanner.setDay('2026-11-21');
  if (switches.secondDay) scanner.setDay('2026-11-20', 1);
  scanner.setStopAtNewDay(switches.stopAtNewDay);
  scanner.setCountingMalformed(switches.countingMalformed);
  scanner.setSumming(summing, 200);
  // Keys known before the scan, so that lines of them are summed; IP literals are keyed by the whole host.
  ['acme', 'globex', 'acme.cdn.test', 'tenant08', ...(ipKey ? ['10.0.0.1', '[::1]', '10.0.0.1:443', 'd1.cloudfront.net'] : [])].forEach((key, id) => {
    scanner.bytes.set(Buffer.from(key, 'latin1'), scanner.jsonTextAt);
    scanner.keyId(scanner.jsonTextAt, scanner.jsonTextAt + key.length, id);
  });
  scanner.bytes.fill(10, scanner.textAt + offset + text.length, scanner.textAt + offset + text.length + 64);
  scanner.bytes.set(text, scanner.textAt + offset);
  const runs: unknown[] = [];
  for (let pos = scanner.textAt + offset, end = pos + text.length; pos < end; ) {
    const next = scanner.scan(pos, end);
    const records = Array.from({ length: scanner.words[0]! }, (_, r) => {
      const at = scanner.firstRecord + r * scanner.stride;
      const record = Array.from(scanner.words.subarray(at, at + scanner.stride));
      // sc-bytes (+16) is only a value when check 4 passed; the two leave different stale bytes otherwise.
      if ((record[3]! & BYTES_OK) === 0) record.splice(4, 2, 0, 0);
      return record;
    });
    runs.push({ next, records, tail: scanner.summedAfterLastRecord, lastSummed: scanner.lastSummedSlot });
    // A directive line is the caller's: step past it as the counter does.
    pos = next < end && scanner.bytes[next] === 35 ? scanner.bytes.indexOf(10, next) + 1 : next;
  }
  const sums = ([0, 1] as const).map((slot) => Array.from({ length: 8 }, (_, id) => [scanner.summedLines(id, slot), scanner.summedBytes(id, slot)]));
  return { runs, sums, malformed: scanner.takeMalformed() };
}

describe('the SIMD line scanner against its JavaScript statement', () => {
  it('finds the same lines, columns, checks, keys, sums and malformed lines in any text at any alignment', () => {
    const switches = fc.record({ summing: fc.boolean(), ipKey: fc.boolean(), secondDay: fc.boolean(), stopAtNewDay: fc.boolean(), countingMalformed: fc.boolean() });
    fc.assert(
      fc.property(fc.array(LINE, { minLength: 1, maxLength: 30 }), fc.nat(31), LAYOUT, switches, (lines, offset, layout, on) => {
        const text = Buffer.concat(lines).subarray(0, 4000);
        const whole = text[text.length - 1] === 10 ? text : Buffer.concat([text.subarray(0, text.length - 1), Buffer.from([10])]);

        const wasm = scanned('wasm', whole, offset, layout, on);
        const js = scanned('js', whole, offset, layout, on);

        expect(wasm).toEqual(js);
      }),
      { numRuns: 600, seed: 20261126 },
    );
  });
});
