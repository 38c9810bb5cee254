import { gzipSync } from 'node:zlib';
import { Readable } from 'node:stream';
import type { SQSEvent } from 'aws-lambda';
import { ingestBatch, ingestObject, OutOfTimeError, type IngestDeps } from '../../src/app/ingest/ingest';
import { silentLog } from '../../src/app/log';
import type { LogSource } from '../../src/app/ports';
import { logText } from '../../src/adapters/logs/log-text';
import { MemoryUsageStore } from '../support/memory-usage-store';
import { parseResolverSpec } from '../../src/domain/logs/account-resolver';
import { PoisonObjectError } from '../../src/domain/errors';
import type { LogObjectRef } from '../../src/domain/counters/log-object';
import type { AttemptRecord } from '../../src/domain/counters/usage-store';
import { s3EventBody } from '../../src/domain/counters/notifications';
import { sqsRecord } from '../support/stack';

/** Objects held in memory, served like S3LogSource serves them: their text, gunzipped. */
class MemoryLogSource implements LogSource {
  readonly objects = new Map<string, Buffer>();
  /** S3's Last-Modified of every object, when a test sets it. */
  lastModified?: Date;
  opened = 0;
  async open(ref: LogObjectRef) {
    this.opened++;
    const body = this.objects.get(ref.key);
    if (body === undefined) throw new PoisonObjectError(ref.key, 'object does not exist');
    return { etag: ref.etag, content: { kind: 'text' as const, text: logText(Readable.from([body]), ref.key) }, ...(this.lastModified === undefined ? {} : { lastModified: this.lastModified }) };
  }
  async etagOf() {
    return 'etag-from-head';
  }
}

const LOG = '#Fields: date time sc-bytes x-host-header\n2026-11-21\t00:00:01\t10\tacme.x.com\n2026-11-21\t00:00:02\t5\tglobex.x.com\n2026-11-22\t00:00:03\t1\tacme.x.com\n';

function setup(historyCap = 48) {
  const store = new MemoryUsageStore(historyCap);
  const source = new MemoryLogSource();
  const deps: IngestDeps = {
    store,
    source,
    log: silentLog,
    settings: {
      resolver: parseResolverSpec('host-label'),
      metricRules: [],
      keyScheme: { keyBytes: 12, shards: 4 },
      messageConcurrency: 2,
      incrementConcurrency: 4,
      visibilityTimeoutSeconds: 30,
      heartbeatSeconds: 0,
      minRemainingMillis: 1000,
    },
  };
  return { store, source, deps };
}

describe('ingest flow (in-memory store)', () => {
  it('counts an object once per account-day and writes its ledger', async () => {
    const { store, source, deps } = setup();
    source.objects.set('a.gz', gzipSync(LOG));

    const result = await ingestObject({ bucket: 'b', key: 'a.gz', etag: 'e1' }, deps);

    expect(result).toMatchObject({ status: 'counted', increments: 3, applied: 3, duplicates: 0 });
    expect(result.lines).toEqual({ read: 3, counted: 3, unattributed: 0, malformed: 0 });
    expect(store.usageOf('acme', '2026-11-21')).toEqual({ requests: 1, bytes: 10 });
    expect(store.usageOf('acme', '2026-11-22')).toEqual({ requests: 1, bytes: 1 });
    expect(store.ledger.size).toBe(1);
  });

  it("adds each account-day's sums by UTC hour in its increment, and records them in its contribution", async () => {
    const { store, source, deps } = setup();
    source.objects.set('h.gz', gzipSync('#Fields: date time sc-bytes x-host-header\n2026-11-21\t05:10:00\t10\tacme.x.com\n2026-11-21\t06:59:59\t7\tacme.x.com\n2026-11-21\t06:00:00\t3\tacme.x.com\n'));

    await ingestObject({ bucket: 'b', key: 'h.gz', etag: 'e1' }, deps);

    const hours = { 5: { requests: 1, bytes: 10 }, 6: { requests: 2, bytes: 10 } };
    expect(store.usageOf('acme', '2026-11-21')).toEqual({ requests: 3, bytes: 20 });
    expect(store.hoursOf('acme', '2026-11-21')).toEqual(hours);
    expect([...store.ledger.values()][0]?.contributions).toEqual([{ account: 'acme', day: '2026-11-21', metrics: { requests: 3, bytes: 20 }, hours }]);
  });

  it('skips a redelivered object through the ledger without reading it again', async () => {
    const { store, source, deps } = setup();
    source.objects.set('a.gz', gzipSync(LOG));
    await ingestObject({ bucket: 'b', key: 'a.gz', etag: 'e1' }, deps);

    const again = await ingestObject({ bucket: 'b', key: 'a.gz', etag: 'e1' }, deps);

    expect(again.status).toBe('already-done');
    expect(source.opened).toBe(1);
    expect(store.usageOf('globex', '2026-11-21')).toEqual({ requests: 1, bytes: 5 });
  });

  it('asks for the ETag when a notification carries none', async () => {
    const { source, deps } = setup();
    source.objects.set('a.gz', gzipSync(LOG));

    const result = await ingestObject({ bucket: 'b', key: 'a.gz', etag: '' }, deps);

    expect(result.object.etag).toBe('etag-from-head');
  });

  it('fails only the poison message of a batch and lands the rest', async () => {
    const { store, source, deps } = setup();
    source.objects.set('a.gz', gzipSync(LOG));
    const event: SQSEvent = {
      Records: [
        sqsRecord('this is not json', { messageId: 'poison' }),
        sqsRecord(s3EventBody([{ bucket: 'b', key: 'gone.gz', etag: 'e0' }]), { messageId: 'missing-object' }),
        sqsRecord(s3EventBody([{ bucket: 'b', key: 'a.gz', etag: 'e1' }]), { messageId: 'good' }),
        sqsRecord('{"Service":"Amazon S3","Event":"s3:TestEvent"}', { messageId: 'test-event' }),
      ],
    };

    const response = await ingestBatch(event, deps);

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'poison' }, { itemIdentifier: 'missing-object' }]);
    expect(response.results.map((r) => [r.messageId, r.outcome])).toEqual([
      ['poison', 'failed'],
      ['missing-object', 'failed'],
      ['good', 'processed'],
      ['test-event', 'skipped'],
    ]);
    expect(response.results[0]?.error?.message).toBe('message poison: body is not JSON');
    expect(store.usageOf('acme', '2026-11-21')).toEqual({ requests: 1, bytes: 10 });
  });

  it('returns messages it has no time left for, untouched', async () => {
    const { store, source, deps } = setup();
    source.objects.set('a.gz', gzipSync(LOG));
    const event: SQSEvent = { Records: [sqsRecord(s3EventBody([{ bucket: 'b', key: 'a.gz', etag: 'e1' }]), { messageId: 'late' })] };

    const response = await ingestBatch(event, deps, { getRemainingTimeInMillis: () => 500 });

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'late' }]);
    expect(store.shards.size).toBe(0);
  });
});

describe('running out of Lambda time mid-object', () => {
  it('stops starting increments, records what it applied, and the retry resumes with a history that forgot everything', async () => {
    const { store, source, deps } = setup(1);
    const sequential = { ...deps, settings: { ...deps.settings, incrementConcurrency: 1 } };
    source.objects.set('late.gz', gzipSync(LOG));
    const ref = { bucket: 'b', key: 'late.gz', etag: 'e1' };
    let started = 0;

    const first = ingestObject(ref, sequential, { receiveCount: 1, outOfTime: () => started++ >= 1 });
    await expect(first).rejects.toThrow(OutOfTimeError);
    // Other traffic rolls every history (cap 1) past the applied key.
    for (const [account, day] of [['acme', '2026-11-21'], ['acme', '2026-11-22'], ['globex', '2026-11-21']] as const) {
      for (let shard = 0; shard < 4; shard++) await store.applyIncrement({ account, day, shard, key: new Uint8Array([shard, 9]), metrics: {} });
    }
    const retry = await ingestObject(ref, sequential, { receiveCount: 2 });

    expect((await store.findObject(ref)).done).toBeDefined();
    expect(retry).toMatchObject({ status: 'counted', increments: 3, applied: 2, resumed: 1, duplicates: 0 });
    expect(store.usageOf('acme', '2026-11-21').bytes).toBe(10);
    expect(store.usageOf('acme', '2026-11-22').bytes).toBe(1);
    expect(store.usageOf('globex', '2026-11-21').bytes).toBe(5);
  });
});

describe('every attempt', () => {
  it('records that it started, bounded by the object\'s Last-Modified, before its first write, and a later message resumes what it saw applied', async () => {
    const { store, source, deps } = setup(1);
    const sequential = { ...deps, settings: { ...deps.settings, incrementConcurrency: 1 } };
    source.objects.set('first.gz', gzipSync(LOG));
    source.lastModified = new Date('2026-11-21T03:00:00Z');
    const ref = { bucket: 'b', key: 'first.gz', etag: 'e1' };
    const records = () => [...store.attempts.values()].flatMap((byId) => [...byId.values()]);
    let beforeWrites: AttemptRecord[] | undefined;
    let started = 0;
    const outOfTime = () => {
      beforeWrites ??= records();
      return started++ >= 1;
    };

    // A first receive, not the last: it records all the same.
    await expect(ingestObject(ref, sequential, { receiveCount: 1, outOfTime })).rejects.toThrow(OutOfTimeError);
    const failed = (await store.findObject(ref)).attempts;
    // Another message for the object (a backfill, a copy of it onto itself): a first receive, its S3 time later.
    source.lastModified = new Date('2026-11-25T00:00:00Z');
    const replay = await ingestObject(ref, sequential, { receiveCount: 1 });

    expect(beforeWrites).toEqual([expect.objectContaining({ state: 'started', since: '2026-11-21T03:00:00.000Z', applied: [] })]);
    expect(failed).toEqual([expect.objectContaining({ state: 'failed', since: '2026-11-21T03:00:00.000Z', applied: [expect.any(Uint8Array)] })]);
    expect(records().filter((r) => r.state === 'started').map((r) => r.since)).toContain('2026-11-21T03:00:00.000Z');
    expect(replay).toMatchObject({ status: 'counted', applied: 2, resumed: 1 });
    expect(store.usageOf('acme', '2026-11-21').bytes).toBe(10);
  });

  it('is bounded by the epoch when neither a record nor the object says when it began', async () => {
    const { store, source, deps } = setup();
    source.objects.set('unknown.gz', gzipSync(LOG));
    const ref = { bucket: 'b', key: 'unknown.gz', etag: 'e1' };

    await ingestObject(ref, deps, { receiveCount: 1 });

    expect([...store.attempts.values()].flatMap((byId) => [...byId.values()]).map((r) => r.since)).toEqual(['1970-01-01T00:00:00.000Z']);
  });
});
