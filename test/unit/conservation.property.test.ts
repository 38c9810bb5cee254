import { Readable } from 'node:stream';
import fc from 'fast-check';
import { parseResolverSpec } from '../../src/domain/logs/account-resolver';
import { logText } from '../../src/adapters/logs/log-text';
import { countLog, type CountOptions } from '../../src/domain/logs/log-counter';

const countLogStream = (body: AsyncIterable<Uint8Array>, options: CountOptions, name: string) => countLog(logText(body, name), options, name);

const LAYOUTS = [
  ['date', 'time', 'sc-bytes', 'x-host-header', 'cs-uri-stem'],
  ['time', 'date', 'cs-uri-stem', 'x-host-header', 'sc-bytes', 'extra'],
  ['date', 'x-host-header', 'sc-bytes'],
];

type Piece =
  | { kind: 'header'; layout: number }
  | { kind: 'good'; host: string; bytes: number; day: number }
  | { kind: 'short' }
  | { kind: 'badDate' }
  | { kind: 'badBytes' }
  | { kind: 'blank' }
  | { kind: 'comment' };

const piece: fc.Arbitrary<Piece> = fc.oneof(
  fc.record({ kind: fc.constant('header' as const), layout: fc.integer({ min: 0, max: LAYOUTS.length - 1 }) }),
  fc.record({
    kind: fc.constant('good' as const),
    host: fc.constantFrom('acme.x.com', 'globex.x.com', '10.0.0.1', '-', 'bad#one.x.com'),
    bytes: fc.nat({ max: 1_000_000 }),
    day: fc.integer({ min: 1, max: 28 }),
  }),
  fc.constant({ kind: 'short' as const }),
  fc.constant({ kind: 'badDate' as const }),
  fc.constant({ kind: 'badBytes' as const }),
  fc.constant({ kind: 'blank' as const }),
  fc.constant({ kind: 'comment' as const }),
);

function render(pieces: Piece[], crlf: boolean): { text: string; dataLines: number; totalBytesIfCounted: number } {
  let layout: string[] | undefined;
  let dataLines = 0;
  const out: string[] = [];
  const row = (values: Record<string, string>) => (layout ?? LAYOUTS[0]!).map((f) => values[f] ?? 'v').join('\t');
  for (const p of pieces) {
    switch (p.kind) {
      case 'header':
        layout = LAYOUTS[p.layout];
        out.push(`#Fields: ${layout!.join(' ')}`);
        break;
      case 'good':
        dataLines++;
        out.push(row({ date: `2026-02-${String(p.day).padStart(2, '0')}`, time: '12:00:00', 'sc-bytes': String(p.bytes), 'x-host-header': p.host, 'cs-uri-stem': '/a' }));
        break;
      case 'short':
        dataLines++;
        out.push('2026-02-01');
        break;
      case 'badDate':
        dataLines++;
        out.push(row({ date: '2026-02-30', time: '12:00:00', 'sc-bytes': '1', 'x-host-header': 'acme.x.com' }));
        break;
      case 'badBytes':
        dataLines++;
        out.push(row({ date: '2026-02-01', time: '12:00:00', 'sc-bytes': '-7', 'x-host-header': 'acme.x.com' }));
        break;
      case 'blank':
        out.push('');
        break;
      case 'comment':
        out.push('#Version: 1.0');
        break;
    }
  }
  return { text: out.join(crlf ? '\r\n' : '\n'), dataLines, totalBytesIfCounted: 0 };
}

function chunked(text: string, sizes: number[]): Readable {
  const bytes = Buffer.from(text);
  const chunks: Buffer[] = [];
  let at = 0;
  for (let i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length]!;
    chunks.push(bytes.subarray(at, at + size));
    at += size;
  }
  return Readable.from(chunks);
}

describe('conservation of log lines', () => {
  it('counts every data line exactly once as counted, unattributed or malformed, however it is chunked', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(fc.constant({ kind: 'header', layout: 0 } as Piece), fc.array(piece, { maxLength: 60 })),
        fc.boolean(),
        fc.array(fc.integer({ min: 1, max: 97 }), { minLength: 1, maxLength: 5 }),
        async ([first, rest], crlf, sizes) => {
          const { text, dataLines } = render([first, ...rest], crlf);
          const options = { resolver: parseResolverSpec('host-label'), metricRules: [], objectKey: 'k' };

          const whole = await countLogStream(Readable.from([Buffer.from(text)]), options, 'k');
          const pieces = await countLogStream(chunked(text, sizes), options, 'k');

          const { read, counted, unattributed, malformed } = whole.lines;
          expect(read).toBe(dataLines);
          expect(counted + unattributed + malformed).toBe(read);
          const requests = whole.tally.usage().reduce((sum, row) => sum + (row.metrics.requests ?? 0), 0);
          expect(requests).toBe(counted + unattributed);
          expect(pieces.lines).toEqual(whole.lines);
          expect(pieces.tally.usage()).toEqual(whole.tally.usage());
        },
      ),
      { numRuns: 300, seed: 20261122 },
    );
  });
});
