import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { captureIo } from '../support/cli';
import { runCli } from '../../src/cli/main';
import { handoffTable } from '../support/handoff';
import { testClients, testStackInfo } from '../support/stack';

// The property test (test/unit/hostile-input.property.test.ts) runs every command with no
// target; here the commands that write meet a real table and hostile values, and the
// table is the same afterwards.

const info = testStackInfo();
const { dynamodb } = testClients(info);
const NOW = () => new Date('2026-11-23T12:00:00Z');

const CASES: [string[], RegExp][] = [
  [['adjust', '--account', 'acme', '--day', '9999-12-31', '--metric', 'requests', '--delta', '1', '--reason', 'x', '--id', 'NC-FUT-1', '--force'], /--day "9999-12-31" is outside the days Tally supports, 2000-01-01\.\.2099-12-31/],
  [['adjust', '--account', 'acme', '--day', '2026-11-21', '--metric', 'requests', '--delta', '9'.repeat(400), '--reason', 'x', '--id', 'NC-BIG-1', '--force'], /delta must be a non-zero whole number from -1,000,000,000,000,000 to 1,000,000,000,000,000/],
  [['adjust', '--account', 'acme', '--day', '+275760-09-13', '--metric', 'requests', '--delta', '1', '--reason', 'x', '--id', 'NC-FUT-2', '--force'], /--day "\+275760-09-13" is not a calendar day/],
  [['quota', 'set', '--account', 'acme', '--metric', 'requests', '--monthly', '1e309', '--force'], /--monthly must be a whole number/],
  [['quota', 'set', '--account', 'acme', '--metric', 'requests', '--monthly', '10', '--from', '9999-12', '--force'], /--from "9999-12" is outside the months Tally supports, 2000-01\.\.2099-12/],
  [['close', '--day', '0000-01-01'], /--day "0000-01-01" is outside the days Tally supports/],
  [['backfill', '--from', '1999-12-31', '--to', '2026-11-21', '--inline'], /--from "1999-12-31" is outside the days Tally supports/],
  [['reconcile', '--from', '2026-11-01', '--to', '2100-02-29'], /--to "2100-02-29" is not a calendar day/],
  [['stripe', 'link', '--account', '../x', '--customer', 'cus_123', '--force'], /--account "\.\.\/x"/],
  [['adjust', '--account', 'acme', '--day', '2026-11-21', '--metric', 'requests', '--delta', '500', '--delta', '-500', '--reason', 'x', '--id', 'NC-TWICE-1', '--force'], /--delta is given 2 times with different values \("500", "-500"\): give it once/],
  [['adjust', '--account', 'acme', '--day', '2026-11-21', '--metric', 'constructor', '--delta', '5', '--reason', 'x', '--id', 'NC-CTOR-1', '--allow-new-metric', '--force'], /metric "constructor" is not a metric name/],
  [['quota', 'set', '--account', 'acme', '--metric', 'constructor', '--monthly', '10', '--allow-new-metric', '--force'], /metric "constructor" must match/],
  [['adjust', '--account', 'acme', '--day', '2026-11-21', '--metric', 'requests', '--delta', '1', '--reason', 'x', '--id', 'INC-1\n[ok] approved', '--force'], /invalid id "INC-1\?\[ok\] approved"/],
  [['reconcile', '--from', '2000-01-01', '--to', '2099-12-31'], /spans 36,525 days; reconcile at most 366 days a run/],
];

describe('hostile values against a real table', () => {
  let env: Record<string, string>;
  let table: string;
  beforeAll(async () => {
    ({ env, table } = await handoffTable(info));
  });

  const items = async () => (await dynamodb.send(new ScanCommand({ TableName: table, Select: 'COUNT', ConsistentRead: true }))).Count ?? 0;

  it.each(CASES.map(([argv, message]) => [argv.slice(0, 2).join(' '), argv, message] as const))('tally %s ... exits 2 with a message and writes nothing', async (_name, argv, message) => {
    const before = await items();
    const io = captureIo();

    const code = await runCli(argv, { io, env, cwd: process.cwd(), now: NOW });

    expect([code, io.stdout]).toEqual([2, '']);
    expect(io.stderr).toMatch(message);
    expect(await items()).toBe(before);
  });
});
