import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { LineScanner } from '../../src/domain/line-scanner';

const root = join(__dirname, '..', '..');

describe('the line scanner', () => {
  it('runs the module assembled from line-scan.wat (the base64 in line-scan-wasm.ts is not stale)', () => {
    const answer = execFileSync('node', [join(root, 'scripts', 'build-wasm.mjs'), '--check'], { encoding: 'utf8' });

    expect(answer).toContain('matches');
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
