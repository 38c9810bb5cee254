import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { logText } from '../../src/adapters/logs/log-text';
import { PoisonObjectError } from '../../src/domain/errors';
import { countLogContent, type FormatOptions } from '../../src/domain/logs/log-formats';
import { captureIo, tallyCommand } from '../support/cli';
import { jsonLog, legacyLog, w3cLog, type Request } from '../support/log-formats';

/**
 * A log line's sc-bytes may have 15 digits (up to 10^15 - 1), so ten lines of one
 * account-day add up past 2^53 - 1, where a sum of doubles is rounded: the object was
 * counted, and its increment written, as 9,999,999,999,999,988 for 9,999,999,999,999,989.
 * Law: an object's account-day total is its exact sum, or the object is refused as
 * poison (nothing counted) when that sum passes 2^53 - 1; in every text format.
 */
describe('an account-day total of a log is exact, or the log is refused', () => {
  const options: FormatOptions = { resolver: { kind: 'host-label' }, metricRules: [], objectKey: 'k' };
  const at = Date.UTC(2026, 10, 21, 7, 0, 0);
  const request = (bytes: number): Request => ({ at, host: 'acme.example.com', method: 'GET', stem: '/', status: 200, bytes, distribution: 'E2EXACT' });
  async function* once(text: string): AsyncIterable<Uint8Array> {
    yield Buffer.from(text);
  }
  const formats = { legacy: legacyLog, w3c: w3cLog, json: (requests: readonly Request[]) => jsonLog(requests) };

  it('for any sc-bytes of up to 15 digits, in any text format', async () => {
    const bytes = fc.oneof(fc.integer({ min: 0, max: 999_999_999_999_999 }), fc.constant(999_999_999_999_999), fc.integer({ min: 0, max: 1_000 }));
    await fc.assert(
      fc.asyncProperty(fc.array(bytes, { minLength: 1, maxLength: 14 }), fc.constantFrom(...(Object.keys(formats) as (keyof typeof formats)[])), async (amounts, format) => {
        const text = formats[format](amounts.map(request));
        const exact = amounts.reduce((sum, amount) => sum + BigInt(amount), 0n);

        const result = await countLogContent({ kind: 'text', text: logText(once(text), 'k') }, options, 'k').catch((error: Error) => error);

        if (exact > BigInt(Number.MAX_SAFE_INTEGER)) {
          expect(result).toBeInstanceOf(PoisonObjectError);
          expect((result as Error).message).toBe(`object k: bytes of account acme on 2026-11-21 adds up past 9007199254740991 (2^53 - 1), where sums stop being exact: no real log holds that much; nothing was counted`);
        } else {
          if (result instanceof Error) throw result;
          expect(result.tally.usage().map((row) => [row.account, row.day, BigInt(row.metrics.bytes!)])).toEqual([['acme', '2026-11-21', exact]]);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('ten lines of 15 digits: refused, not counted rounded', async () => {
    const text = legacyLog([...Array.from({ length: 9 }, () => request(999_999_999_999_999)), request(999_999_999_999_998)]);

    await expect(countLogContent({ kind: 'text', text: logText(once(text), 'k') }, options, 'k')).rejects.toThrow(PoisonObjectError);
  });

  it('tally count of files each exact whose sum is not: exit 2 naming the account-day, nothing printed rounded', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-exact-'));
    try {
      // 5 x (10^15 - 1) = 4,999,999,999,999,995 a file, exact; two files: 9,999,999,999,999,990, past 2^53 - 1.
      writeFileSync(join(dir, 'a.log'), legacyLog(Array.from({ length: 5 }, () => request(999_999_999_999_999))));
      writeFileSync(join(dir, 'b.log'), legacyLog(Array.from({ length: 5 }, () => request(999_999_999_999_999))));
      const one = captureIo();
      const both = captureIo();

      expect(await tallyCommand('count')(['--json', 'a.log'], one, {}, dir)).toBe(0);
      const code = await tallyCommand('count')(['--json', 'a.log', 'b.log'], both, {}, dir);

      expect(JSON.parse(one.stdout).usage[0].metrics.bytes).toBe(4_999_999_999_999_995);
      expect(code).toBe(2);
      expect(both.stdout).toBe('');
      expect(both.stderr.split('\n').at(-2)! + '\n').toBe(
        'tally count: bytes of account acme on 2026-11-21 adds up past 9007199254740991 (2^53 - 1) over the files up to b.log, where sums stop being exact: nothing is printed rounded; count fewer files at once\n',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
