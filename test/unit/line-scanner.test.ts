import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { LineScanner } from '../../src/domain/logs/line-scanner';

const root = join(__dirname, '..', '..');

describe('the line scanner', () => {
  it('runs the modules assembled from line-scan.wat, column-sum.wat, parquet-rle.wat and parquet-plain.wat (their base64 in *-wasm.ts is not stale)', () => {
    const answer = execFileSync('node', [join(root, 'scripts', 'build-wasm.mjs'), '--check'], { encoding: 'utf8' });

    expect(answer).toContain('line-scan-wasm.ts matches');
    expect(answer).toContain('parquet-rle-wasm.ts matches');
    expect(answer).toContain('parquet-plain-wasm.ts matches');
  });

  it('scans with WebAssembly SIMD on this Node', () => {
    expect(LineScanner.simd).toBe(true);
  });

  it('records the columns asked for, counts every field and stops before a directive', () => {
    for (const engine of ['wasm', 'js'] as const) {
      const scanner = new LineScanner(1024, engine);
      scanner.setLayout({ columns: [0, 2], width: 3, date: 0, time: -1, bytes: 2 });
      const text = Buffer.from('2026-11-21\tx\t42\n\ta\n#Fields: date\n');
      scanner.bytes.set(text, scanner.textAt);

      const next = scanner.scan(scanner.textAt, scanner.textAt + text.length);
      const records = scanner.words[0]!;
      const at = scanner.firstRecord;
      const column = (record: number, slot: number) => {
        const start = scanner.words[record + 8 + 2 * slot]!;
        return Buffer.from(scanner.bytes.subarray(start, scanner.words[record + 9 + 2 * slot]!)).toString();
      };

      expect({ engine, records, stoppedAt: next - scanner.textAt }).toEqual({ engine, records: 2, stoppedAt: 19 });
      expect([column(at, 1), column(at, 2), scanner.words[at + 2], scanner.floats[(at >> 1) + 2]]).toEqual(['2026-11-21', '42', 3, 42]);
      expect(scanner.words[at + scanner.stride + 2]).toBe(2);
    }
  });

  /** A scanner of `date time sc-bytes x-host-header` lines with the host labels acme (key 0) and globex (key 1) known. */
  function hostScanner(engine: 'wasm' | 'js'): LineScanner {
    const scanner = new LineScanner(4096, engine);
    scanner.setLayout({ columns: [0, 1, 2, 3], width: 4, date: 0, time: 1, bytes: 2, key: { kind: 'label', columns: [3, -1] } });
    scanner.setSumming(true, 1000);
    ['acme', 'globex'].forEach((key, id) => {
      scanner.bytes.set(Buffer.from(key), scanner.jsonTextAt);
      scanner.keyId(scanner.jsonTextAt, scanner.jsonTextAt + key.length, id);
    });
    return scanner;
  }

  function scanText(scanner: LineScanner, text: string): { records: string[]; next: number } {
    const bytes = Buffer.from(text);
    scanner.bytes.set(bytes, scanner.textAt);
    scanner.bytes.fill(10, scanner.textAt + bytes.length, scanner.textAt + bytes.length + 64);
    const next = scanner.scan(scanner.textAt, scanner.textAt + bytes.length) - scanner.textAt;
    const records = Array.from({ length: scanner.words[0]! }, (_, r) => {
      const at = scanner.firstRecord + r * scanner.stride;
      return `${Buffer.from(scanner.bytes.subarray(scanner.words[at]!, scanner.words[at + 1]!)).toString()} checks ${scanner.words[at + 3]}`;
    });
    return { records, next };
  }

  it('sums the lines of its second day apart from the first, and says which day the last line summed was on', () => {
    for (const engine of ['wasm', 'js'] as const) {
      const scanner = hostScanner(engine);
      scanner.setDay('2026-11-21');
      scanner.setDay('2026-11-20', 1);

      const { records } = scanText(
        scanner,
        ['2026-11-21\t23:59:59\t10\tacme.x.com', '2026-11-20\t23:59:58\t20\tacme.x.com', '2026-11-20\t23:59:59\t30\tglobex.x.com', '2026-11-21\t00:00:01\t40\tglobex.x.com', '2026-11-20\t23:59:59\t50\tacme.x.com', ''].join('\n'),
      );

      expect({ engine, records }).toEqual({ engine, records: [] });
      expect([0, 1].map((id) => [scanner.summedLines(id), scanner.summedBytes(id), scanner.summedLines(id, 1), scanner.summedBytes(id, 1)])).toEqual([
        [1, 10, 2, 70],
        [1, 40, 1, 30],
      ]);
      expect(scanner.lastSummedSlot).toBe(1);
      scanner.clearSums(2, 1);
      expect([scanner.summedLines(0, 1), scanner.summedLines(0)]).toEqual([0, 1]);
    }
  });

  it("hands a key's sums on a day over by hour, as UsageTally.addSlots reads them, and touches nothing else", () => {
    for (const engine of ['wasm', 'js'] as const) {
      const scanner = hostScanner(engine);
      scanner.setDay('2026-11-21');
      scanner.setDay('2026-11-20', 1);
      scanText(
        scanner,
        ['2026-11-21\t00:10:00\t10\tacme.x.com', '2026-11-21\t00:59:59\t5\tacme.x.com', '2026-11-21\t23:00:00\t7\tacme.x.com', '2026-11-21\t13:00:00\t40\tglobex.x.com', '2026-11-20\t23:00:00\t3\tacme.x.com', ''].join('\n'),
      );
      const width = 3;
      const slots = new Float64Array(25 * width).fill(-1);

      const lines = scanner.hourSlots(0, 0, slots, width);

      const hour = (h: number) => [slots[(h + 1) * width], slots[(h + 1) * width + 1], slots[(h + 1) * width + 2]];
      expect({ engine, lines }).toEqual({ engine, lines: 3 });
      expect([hour(0), hour(13), hour(22), hour(23)]).toEqual([
        [2, 15, -1],
        [0, 0, -1],
        [0, 0, -1],
        [1, 7, -1],
      ]);
      // Slot 0 (lines of no time) is not the scanner's: left as it was.
      expect([slots[0], slots[1], slots[2]]).toEqual([-1, -1, -1]);
      expect([scanner.hourSlots(1, 0, slots, width), hour(13), scanner.hourSlots(0, 1, slots, width), hour(23), hour(0)]).toEqual([1, [1, 40, -1], 1, [1, 3, -1], [0, 0, -1]]);
    }
  });

  it('stops after the record of a line of a third day when asked, so that the caller can make it a day', () => {
    for (const engine of ['wasm', 'js'] as const) {
      const scanner = hostScanner(engine);
      scanner.setDay('2026-11-21');
      const text = ['2026-11-21\t00:00:01\t1\tacme.x.com', '2026-11-22\t00:00:02\t2\tacme.x.com', '2026-11-22\t00:00:03\t3\tacme.x.com', ''].join('\n');

      const going = scanText(scanner, text);
      scanner.setStopAtNewDay(true);
      const stopped = scanText(scanner, text);

      expect({ engine, records: going.records.length }).toEqual({ engine, records: 2 });
      expect({ engine, ...stopped }).toEqual({ engine, records: ['2026-11-22\t00:00:02\t2\tacme.x.com checks 6'], next: 66 });
      expect(scanner.lastSummedSlot).toBe(-1);
    }
  });

  it('counts malformed lines instead of recording them when asked: too few fields, a bad time or byte count, not a CR line', () => {
    for (const engine of ['wasm', 'js'] as const) {
      const scanner = hostScanner(engine);
      scanner.setDay('2026-11-21');
      scanner.setCountingMalformed(true);
      const lines = [
        '2026-11-21\t12:00:00\t5',
        '2026-11-21\t25:00:00\t5\tacme.x.com',
        '2026-11-19\t12:00:00\t5x\tacme.x.com',
        '2026-11-21\t12:00:00\t5\tacme.x.com\r',
        '2026-11-21\t12:00:00\t-\tacme.x.com',
        '',
        'x',
        '',
      ];

      const { records } = scanText(scanner, lines.join('\n'));

      // The CR line and the empty one are the caller's; the good line is summed.
      expect({ engine, records }).toEqual({ engine, records: ['2026-11-21\t12:00:00\t5\tacme.x.com\r checks 7', ' checks 0'] });
      expect([scanner.takeMalformed(), scanner.takeMalformed(), scanner.summedLines(0)]).toEqual([4, 0, 1]);
    }
  });

  it('records a column as far out as a #Fields line that fits in its text can name', () => {
    const scanner = new LineScanner(1024);
    const last = scanner.maxColumns - 1;
    const text = Buffer.from(`${'\t'.repeat(last)}x\n`);

    scanner.setLayout({ columns: [last], width: last + 1, date: -1, time: -1, bytes: -1 });
    scanner.bytes.set(text, scanner.textAt);
    scanner.scan(scanner.textAt, scanner.textAt + text.length);

    expect(scanner.words[scanner.firstRecord + 2]).toBe(last + 1);
    expect(scanner.words[scanner.firstRecord + 10]! - scanner.textAt).toBe(last);
    expect(() => scanner.setLayout({ columns: [last + 1], width: 1, date: -1, time: -1, bytes: -1 })).toThrow(RangeError);
  });
});
