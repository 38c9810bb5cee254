import { diagnose, type InspectedObject, type ObjectFinding } from '../../src/domain/counters/dead-letter';
import { droppedMessageKey, ledgerKey, usageKey } from '../../src/domain/counters/keys';

const object = (key: string, finding: ObjectFinding): InspectedObject => ({ object: { bucket: 'logs', key, etag: 'e' }, finding });

describe('diagnosing a dead letter', () => {
  it('calls a body that is no notification poison, with the parser reason', () => {
    expect(diagnose({ kind: 'poison', error: 'PoisonMessageError: body is not JSON' })).toEqual({ verdict: 'poison', reason: 'PoisonMessageError: body is not JSON' });
  });

  it.each([
    [{ kind: 'gone' } as const, /a\.gz: object does not exist in S3/],
    [{ kind: 'replaced', currentEtag: 'f00' } as const, /a\.gz: object was replaced since the notification \(S3 now holds ETag f00/],
    [{ kind: 'unreadable', error: 'cannot gunzip: incorrect header check' } as const, /a\.gz: not a log the consumer can read: cannot gunzip/],
  ])('calls a message poison when one object can never be counted (%j), whatever the others', (finding, reason) => {
    const diagnosis = diagnose({ kind: 'objects', objects: [object('ok.gz', { kind: 'pending' }), object('a.gz', finding)] });

    expect(diagnosis.verdict).toBe('poison');
    expect(diagnosis.reason).toMatch(reason);
    expect(diagnosis.reason).not.toMatch(/ok\.gz/);
  });

  it('says unknown, never poison, when a check failed', () => {
    const diagnosis = diagnose({ kind: 'objects', objects: [object('a.gz', { kind: 'unchecked', error: 'AccessDenied' })] });

    expect(diagnosis).toEqual({ verdict: 'unknown', reason: 'could not check: AccessDenied' });
  });

  it('says counted when every object is done, retryable when one is not, with the failed attempt as reason', () => {
    const done = object('a.gz', { kind: 'counted', processedAt: '2026-11-21T01:00:00Z' });
    const failed = object('b.gz', { kind: 'failed', attempts: 2, reason: 'ThrottlingException: slow down', at: '2026-11-21T01:02:00Z' });

    expect(diagnose({ kind: 'objects', objects: [done] }).verdict).toBe('counted');
    expect(diagnose({ kind: 'objects', objects: [done, failed] })).toEqual({
      verdict: 'retryable',
      reason: 'b.gz: 2 failed attempt(s), last 2026-11-21T01:02:00Z: ThrottlingException: slow down',
    });
    expect(diagnose({ kind: 'skip', reason: 's3:TestEvent' }).verdict).toBe('nothing-to-count');
  });

  it('keeps drop records in a partition no usage or ledger item can have', () => {
    const key = droppedMessageKey('9f1c-77');

    expect(key).toEqual({ PK: 'DLQ#DROPPED', SK: 'MSG#9f1c-77' });
    expect(key.PK).not.toBe(usageKey({ accountId: 'DLQ', day: '2026-11-21', shard: 0 }).PK);
    expect(ledgerKey({ bucket: 'b', key: 'k', etag: 'e' }).PK.startsWith('OBJ#')).toBe(true);
  });
});
