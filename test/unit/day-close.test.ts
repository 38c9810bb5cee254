import { createHmac } from 'node:crypto';
import { closableAt, closerWindow, isClosable, lastClosableDay, lateFigures, marksLateUsage, sumFigures } from '../../src/domain/billing/day-close';
import { lateMarkerKey, parseAccountSortKey, revisionKey, revisionRowKey } from '../../src/domain/counters/keys';
import { revisionCsv, revisionExport, revisionExportKeys } from '../../src/domain/billing/revision-export';
import { MAX_WEBHOOK_BODY_BYTES, signatureHeader, verifySignature, webhookBackoffSeconds, webhookEventBody, webhookEventId } from '../../src/domain/billing/webhook';

describe('when a day closes', () => {
  it('is open until its end plus the grace period, then closable', () => {
    expect(closableAt('2026-11-21', 48).toISOString()).toBe('2026-11-24T00:00:00.000Z');
    expect(isClosable('2026-11-21', new Date('2026-11-23T23:59:59Z'), 48)).toBe(false);
    expect(isClosable('2026-11-21', new Date('2026-11-24T00:00:00Z'), 48)).toBe(true);
    expect(lastClosableDay(new Date('2026-11-24T00:00:00Z'), 48)).toBe('2026-11-21');
    expect(lastClosableDay(new Date('2026-11-23T23:59:59Z'), 48)).toBe('2026-11-20');
    expect(closerWindow(new Date('2026-11-24T10:00:00Z'), 48)).toEqual({ from: '2026-10-18', to: '2026-11-21' });
  });

  it('marks usage as late from an hour before the day can close, never before', () => {
    expect(marksLateUsage('2026-11-21', new Date('2026-11-23T22:59:59Z'), 48)).toBe(false);
    expect(marksLateUsage('2026-11-21', new Date('2026-11-23T23:00:00Z'), 48)).toBe(true);
    expect(marksLateUsage('2026-11-21', new Date('2026-12-30T00:00:00Z'), 48)).toBe(true);
  });

  it('takes the next revision as what the counters hold beyond the revisions so far', () => {
    const revisions: Record<string, number>[] = [{ requests: 10, bytes: 900 }, { requests: 2 }];

    expect(lateFigures({ requests: 12, bytes: 900 }, revisions)).toEqual({});
    expect(lateFigures({ requests: 15, bytes: 950, authorization_requests: 1 }, revisions)).toEqual({ requests: 3, bytes: 50, authorization_requests: 1 });
    expect(sumFigures([...revisions, lateFigures({ requests: 15, bytes: 950 }, revisions)])).toEqual({ requests: 15, bytes: 950 });
  });
});

describe('keys of the billing handoff', () => {
  it('spells revision items in the account range the API reads, and their copies per day', () => {
    expect(revisionKey({ accountId: 'acme', day: '2026-11-21', revision: 2 })).toEqual({ PK: 'ACCT#acme', SK: 'DAY#2026-11-21#R#0002' });
    expect(parseAccountSortKey('DAY#2026-11-21#R#0002')).toEqual({ kind: 'revision', day: '2026-11-21', revision: 2 });
    expect(revisionRowKey({ accountId: 'acme', day: '2026-11-21', revision: 2 })).toEqual({ PK: 'CLOSED#2026-11-21', SK: 'R#0002#acme' });
    expect(lateMarkerKey('2026-11-21', 'acme')).toEqual({ PK: expect.stringMatching(/^LATE#(0\d|1[0-5])$/), SK: '2026-11-21#acme' });
  });
});

describe('revision exports', () => {
  const table = revisionExport({
    day: '2026-11-21',
    revision: 2,
    closedAt: '2026-11-24T00:05:00.000Z',
    rows: [{ account: 'globex', metrics: { requests: 1 } }, { account: 'acme', metrics: { bytes: 5, requests: 2 } }],
    metricNames: ['requests', 'bytes', 'authorization_requests'],
  });

  it('puts every revision under day=/revision= and writes one CSV row per account, sorted, every metric a column', () => {
    expect(revisionExportKeys('exports/', '2026-11-21', 2)).toEqual({
      parquet: 'exports/day=2026-11-21/revision=2/usage.parquet',
      csv: 'exports/day=2026-11-21/revision=2/usage.csv',
    });
    expect(revisionCsv(table)).toBe(
      'account,day,revision,closed_at,requests,bytes,authorization_requests\r\n' +
        'acme,2026-11-21,2,2026-11-24T00:05:00.000Z,2,5,0\r\n' +
        'globex,2026-11-21,2,2026-11-24T00:05:00.000Z,1,0,0\r\n',
    );
  });
});

describe('webhook signatures', () => {
  const secret = 'whsec-for-the-unit-tests';
  const body = '{"id":"evt_1","type":"day.closed"}';

  it('signs "<t>.<body>" with HMAC-SHA256, as any HMAC library computes it', () => {
    const header = signatureHeader(secret, body, 1795000000);

    expect(header).toBe(`t=1795000000,v1=${createHmac('sha256', secret).update(`1795000000.${body}`).digest('hex')}`);
  });

  it('verifies a fresh signature and refuses a changed body, another secret or an old timestamp', () => {
    const header = signatureHeader(secret, body, 1795000000);

    expect(verifySignature(secret, header, body, 1795000010)).toBe(true);
    expect(verifySignature(secret, header, `${body} `, 1795000010)).toBe(false);
    expect(verifySignature('another-secret-value', header, body, 1795000010)).toBe(false);
    expect(verifySignature(secret, header, body, 1795000000 + 301)).toBe(false);
  });

  it('gives each revision one id, whoever builds it, and the same body every time', () => {
    const input = {
      scope: 'tally-prod-usage',
      day: '2026-11-21',
      revision: 1,
      createdAt: '2026-11-24T00:05:00.000Z',
      closedAt: '2026-11-24T00:05:00.000Z',
      rows: [{ account: 'b', metrics: { requests: 1 } }, { account: 'a', metrics: { requests: 2 } }],
      exported: { parquet: 's3://b/exports/day=2026-11-21/revision=1/usage.parquet', csv: 's3://b/exports/day=2026-11-21/revision=1/usage.csv' },
    };

    expect(webhookEventBody(input)).toBe(webhookEventBody({ ...input, rows: [...input.rows].reverse() }));
    expect(JSON.parse(webhookEventBody(input))).toMatchObject({
      id: webhookEventId('tally-prod-usage', '2026-11-21', 1),
      type: 'day.closed',
      data: { day: '2026-11-21', revision: 1, accounts: [{ account: 'a' }, { account: 'b' }], export: { rows: 2 } },
    });
    expect(webhookEventId('tally-dev-usage', '2026-11-21', 1)).not.toBe(webhookEventId('tally-prod-usage', '2026-11-21', 1));
  });

  it('leaves the accounts out of a body that would be too large, pointing at the export', () => {
    const rows = Array.from({ length: 5_000 }, (_, i) => ({ account: `account-${i}`, metrics: { requests: i, bytes: i * 1000 } }));
    const body = webhookEventBody({ scope: 's', day: '2026-11-21', revision: 1, createdAt: 'x', closedAt: 'x', rows, exported: { parquet: 'p', csv: 'c' } });

    expect(body.length).toBeLessThan(MAX_WEBHOOK_BODY_BYTES);
    expect(JSON.parse(body).data).toEqual({ day: '2026-11-21', revision: 1, closedAt: 'x', accountsOmitted: 5_000, export: { parquet: 'p', csv: 'c', rows: 5_000 } });
  });

  it('backs off doubling from the base, capped', () => {
    expect([1, 2, 3, 4, 8, 20].map((count) => webhookBackoffSeconds(count, 30, 3600))).toEqual([30, 60, 120, 240, 3600, 3600]);
  });
});
