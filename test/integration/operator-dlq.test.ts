import { isDeepStrictEqual } from 'node:util';
import type { DropReport, InspectedDeadLetter } from '../../src/app/ingest/dead-letters';
import type { ReplayReport } from '../../src/app/ingest/replay';
import type { DeadLetterDrop } from '../../src/domain/counters/dead-letter';
import type { LogObjectRef } from '../../src/domain/counters/log-object';
import { queueDepth } from '../../src/local/pipeline/poller';
import { tallyCommand } from '../support/cli';
import { captureIo, countersOf, eventually, halfIngest, notificationBody, operatorEnv, putLogSet, sendBodies, startConsumer } from '../support/operator';
import { createTestQueues, testClients, testStackInfo } from '../support/stack';
import { SHORT_WAIT_MS } from '../support/time-limits';

const dlq = tallyCommand('dlq');
const replay = tallyCommand('replay');

const info = testStackInfo();
const { sqs } = testClients(info);
const DAYS = ['2026-11-20', '2026-11-21'];

/** A notification for an object that was never written (or was deleted since). */
function goneObject(prefix: string): LogObjectRef {
  return { bucket: info.bucket, key: `${prefix}E2OPS.2026-11-21-18.gone0001.gz`, etag: '0123456789abcdef0123456789abcdef', size: 100 };
}

async function json<T>(run: Promise<number>, io: ReturnType<typeof captureIo>): Promise<{ code: number; report: T }> {
  const code = await run;
  return { code, report: JSON.parse(io.stdout) as T };
}

describe('tally dlq', () => {
  it('lists a poison message with its reason, drops it on record, and a routine replay then exits 0', async () => {
    const queues = await createTestQueues(info);
    const set = await putLogSet({ days: ['2026-11-21'], hours: [0] });
    await halfIngest(set.refs[0]!, 1);
    const bodies = { poison: 'not json {', gone: notificationBody(goneObject(set.prefix)), halfCounted: notificationBody(set.refs[0]!) };
    await sendBodies(queues.dlqUrl, [bodies.poison, bodies.gone, bodies.halfCounted]);
    const env = { ...operatorEnv(info, queues), USER: 'ops-tester' };

    const listIo = captureIo();
    const listed = await json<{ messages: InspectedDeadLetter[]; verdicts: Record<string, number> }>(dlq(['list', '--json'], listIo, env), listIo);
    const depthAfterList = await queueDepth(sqs, queues.dlqUrl);
    const textIo = captureIo();
    await dlq(['list'], textIo, env);
    const replayBefore = await replay(['--dry-run', '--json'], captureIo(), env);
    const dropIo = captureIo();
    const dropped = await json<DropReport>(dlq(['drop', '--poison', '--reason', 'INC-7: not a notification; object deleted', '--json'], dropIo, env), dropIo);
    const recordsIo = captureIo();
    const records = await json<{ dropped: DeadLetterDrop[] }>(dlq(['dropped', '--json'], recordsIo, env), recordsIo);
    const replayIo = captureIo();
    const replayAfter = await replay([], replayIo, env);
    const afterReplay = await queueDepth(sqs, queues.dlqUrl);
    const consumer = startConsumer(queues);
    try {
      await eventually(async () => {
        const { got, want } = await countersOf(set, DAYS);
        return isDeepStrictEqual(got, want);
      }, SHORT_WAIT_MS, 'exact counts');
    } finally {
      await consumer.stop();
    }

    // Listed, each with its reason; the listing left every message visible.
    expect(listed.code).toBe(0);
    expect(listed.report.verdicts).toMatchObject({ poison: 2, retryable: 1 });
    const byVerdict = (body: string) => listed.report.messages.find((message) => message.body === body)!;
    expect(byVerdict(bodies.poison)).toMatchObject({ verdict: 'poison', reason: expect.stringMatching(/body is not JSON/), objects: [] });
    expect(byVerdict(bodies.gone)).toMatchObject({
      verdict: 'poison',
      reason: expect.stringMatching(/^object does not exist in S3 \(deleted, or never written\)$/),
    });
    expect(byVerdict(bodies.halfCounted)).toMatchObject({
      verdict: 'retryable',
      reason: expect.stringMatching(/1 failed attempt\(s\), last .*ConsumerCrash: consumer crashed/),
      objects: [`s3://${info.bucket}/${set.refs[0]!.key}`],
    });
    for (const message of listed.report.messages) {
      expect(message.receiveCount).toBeGreaterThanOrEqual(1);
      expect(Date.parse(message.sentAt!)).toBeGreaterThan(Date.now() - 120_000);
    }
    expect(depthAfterList).toEqual({ visible: 3, inFlight: 0 });
    expect(textIo.stdout).toMatch(/3 message\(s\): 2 poison, 1 retryable; all visible again, nothing deleted/);
    expect(replayBefore).toBe(0);

    // Dropped with an audit record each: who, when, why, the body and the message id.
    expect(dropped.code).toBe(0);
    expect(dropped.report.messages.map((message) => message.outcome)).toEqual(['dropped', 'dropped']);
    const poisonIds = listed.report.messages.filter((message) => message.verdict === 'poison').map((message) => message.messageId);
    expect(dropped.report.messages.map((message) => message.messageId).sort()).toEqual([...poisonIds].sort());
    const ours = records.report.dropped.filter((drop) => poisonIds.includes(drop.messageId));
    expect(ours).toHaveLength(2);
    for (const drop of ours) {
      expect(drop).toMatchObject({ actor: 'ops-tester', reason: 'INC-7: not a notification; object deleted', state: 'dropped', verdict: 'poison', queueUrl: queues.dlqUrl });
      expect(Date.parse(drop.droppedAt!)).toBeGreaterThanOrEqual(Date.parse(drop.recordedAt));
      expect(drop.body).toBe(listed.report.messages.find((message) => message.messageId === drop.messageId)!.body);
    }

    // The routine replay: nothing poison is left, so it ends at exit 0 with exact counts.
    expect(replayAfter).toBe(0);
    expect(replayIo.stdout).toMatch(/received 1 message\(s\): re-sent 1, skipped 0, failed 0 \(kept in the DLQ\); deleted from the DLQ 1/);
    expect(afterReplay).toEqual({ visible: 0, inFlight: 0 });
    const { got, want } = await countersOf(set, DAYS);
    expect(got).toEqual(want);
  });

  it('keeps a message named by id that may still carry usage, unless --force; a dry run drops nothing', async () => {
    const queues = await createTestQueues(info);
    const set = await putLogSet({ days: ['2026-11-21'], hours: [6] });
    await sendBodies(queues.dlqUrl, [notificationBody(set.refs[0]!)]);
    const env = operatorEnv(info, queues);
    const listIo = captureIo();
    const listed = await json<{ messages: InspectedDeadLetter[] }>(dlq(['list', '--json'], listIo, env), listIo);
    const id = listed.report.messages[0]!.messageId;

    const refusedIo = captureIo();
    const refused = await dlq(['drop', '--id', id, '--reason', 'looks stuck'], refusedIo, env);
    const dryIo = captureIo();
    const dry = await dlq(['drop', '--id', id, '--reason', 'looks stuck', '--force', '--dry-run'], dryIo, env);
    const depth = await queueDepth(sqs, queues.dlqUrl);
    const missingIo = captureIo();
    const missing = await dlq(['drop', '--id', 'no-such-message', '--reason', 'typo'], missingIo, env);

    expect(listed.report.messages[0]).toMatchObject({ verdict: 'retryable', reason: expect.stringMatching(/readable now, no attempt on record/) });
    expect(refused).toBe(1);
    expect(refusedIo.stdout).toMatch(new RegExp(`kept ${id}: retryable, it may still carry usage .*--force drops it anyway`));
    expect(dry).toBe(0);
    expect(dryIo.stdout).toMatch(/dry run: would drop 1 of the 1 message\(s\) in the DLQ; nothing was recorded or deleted/);
    expect(depth).toEqual({ visible: 1, inFlight: 0 });
    expect(missing).toBe(1);
    expect(missingIo.stdout).toMatch(/not in the dead-letter queue .*: no-such-message/);
  });
});

describe('tally replay --dry-run', () => {
  it('reports no failures for what it did not attempt: a poison message is one a replay would keep', async () => {
    const queues = await createTestQueues(info);
    const set = await putLogSet({ days: ['2026-11-21'], hours: [12] });
    await sendBodies(queues.dlqUrl, ['{"hello":"world"}', notificationBody(set.refs[0]!)]);
    const env = operatorEnv(info, queues);

    const jsonIo = captureIo();
    const dryJson = await json<ReplayReport>(replay(['--dry-run', '--json'], jsonIo, env), jsonIo);
    const textIo = captureIo();
    const dryText = await replay(['--dry-run'], textIo, env);

    expect(dryJson.code).toBe(0);
    expect(dryJson.report).toMatchObject({ dryRun: true, received: 2, failed: 0, wouldReplay: 1, poisonKept: 1, deleted: 0 });
    expect(dryJson.report.messages.map((message) => message.outcome).sort()).toEqual(['would-keep', 'would-replay']);
    expect(dryText).toBe(0);
    expect(textIo.stdout).not.toMatch(/fail/i);
    expect(textIo.stdout).toMatch(/a replay would take 1 and leave 1 poison message\(s\) in the DLQ \(tally dlq list says why/);
    expect(await queueDepth(sqs, queues.dlqUrl)).toEqual({ visible: 2, inFlight: 0 });
  });
});
