import { parseResolverSpec } from '../../src/domain/logs/account-resolver';
import { LineScanner } from '../../src/domain/logs/line-scanner';
import { countLogContent, type FormatCount, type FormatOptions } from '../../src/domain/logs/log-formats';

/**
 * A finished count hands its scanner back and the next count takes it (a warm Lambda
 * counts object after object): whatever the first count left in it (keys, sums, day,
 * layout, JSON template, summing) must not reach the next.
 */
describe('a reused line scanner', () => {
  it('is as new: no key, no sums, no day, no summing', () => {
    const first = LineScanner.acquire(4096);
    const key = Buffer.from('acme');
    first.bytes.set(key, first.textAt);
    expect(first.keyId(first.textAt, first.textAt + key.length, 0)).toBe(0);
    first.words[4096 >> 2] = 7;
    first.setDay('2026-11-21');
    first.setSumming(true, 1000);
    first.release();

    const second = LineScanner.acquire(4096);
    second.bytes.set(key, second.textAt);

    expect(second).toBe(first);
    expect(second.keyId(second.textAt, second.textAt + key.length, -1)).toBe(-1);
    expect([second.summedLines(0), second.words[4 >> 2], second.words[64 >> 2]]).toEqual([0, 0, 0]);
    second.release();
  });

  it('counts each of a run of logs (other layouts, accounts, days and formats) as a scanner of its own would', async () => {
    const legacy = (fields: string, lines: string[]) => `#Version: 1.0\n#Fields: ${fields}\n${lines.join('\n')}\n`;
    const json = (lines: Record<string, string>[]) => lines.map((line) => JSON.stringify(line)).join('\n') + '\n';
    const logs = [
      legacy('date time sc-bytes x-host-header', ['2026-11-21\t10:00:00\t100\tacme.example.com', '2026-11-21\t10:00:01\t200\tglobex.example.com', '2026-11-21\t10:00:02\t300\tacme.example.com']),
      json([
        { date: '2026-11-22', time: '11:00:00', 'sc-bytes': '5', 'x-host-header': 'initech.example.com' },
        { date: '2026-11-22', time: '11:00:01', 'sc-bytes': '6', 'x-host-header': 'globex.example.com' },
      ]),
      legacy('date time cs(Host) sc-bytes x-host-header cs-method', [
        '2026-11-23\t12:00:00\td1.cloudfront.net\t7\thooli.example.com\tGET',
        '2026-11-23\t12:00:01\td1.cloudfront.net\t8\tacme.example.com\tGET',
        '2026-11-23\t12:00:02\td1.cloudfront.net\t9\t-\tGET',
      ]),
      json([{ date: '2026-11-24', time: '13:00:00', 'sc-bytes': '11', 'x-host-header': 'acme.example.com' }]),
    ];
    const options: FormatOptions = { resolver: parseResolverSpec('host-label'), metricRules: [], objectKey: 'k' };
    const count = (text: string, scanner: 'wasm' | 'js') =>
      countLogContent({ kind: 'text', text: (async function* () { yield Buffer.from(text); })() }, { ...options, scanner }, 'k');
    const summary = (result: FormatCount) => ({ lines: result.lines, usage: result.tally.usage(), samples: result.malformedSamples });

    for (let round = 0; round < 3; round++) {
      for (const text of logs) expect(summary(await count(text, 'wasm'))).toEqual(summary(await count(text, 'js')));
    }
  });
});
