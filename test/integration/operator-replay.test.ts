import { execFile } from 'node:child_process';
import { isDeepStrictEqual, promisify } from 'node:util';
import { tallyCommand } from '../support/cli';
import { queueDepth } from '../../src/local/pipeline/poller';
import { crashAfterUpdates } from '../support/faults';
import {
  captureIo,
  countersOf,
  eventually,
  halfIngest,
  notificationBody,
  operatorEnv,
  putLogSet,
  sendBodies,
  startConsumer,
} from '../support/operator';
import { createTestQueues, putLogObject, testClients, testIngestDeps, testStackInfo } from '../support/stack';
import { SHORT_WAIT_MS } from '../support/time-limits';

const runReplay = tallyCommand('replay');

const info = testStackInfo();
const { sqs } = testClients(info);
const DAYS = ['2026-11-20', '2026-11-21'];
const root = `${__dirname}/../..`;

async function dlqHolds(dlqUrl: string): Promise<number> {
  const depth = await queueDepth(sqs, dlqUrl);
  return depth.visible + depth.inFlight;
}

describe('tally replay', () => {
  it('replays a DLQ of half-counted objects twice to exact counts, reporting and keeping poison messages', async () => {
    const queues = await createTestQueues(info);
    const set = await putLogSet({ days: ['2026-11-21'], hours: [0, 6, 12] });
    await halfIngest(set.refs[0]!, 1);
    await halfIngest(set.refs[1]!, 2);
    await halfIngest(set.refs[2]!, 0);
    const garbage = await putLogObject(`${set.prefix}E2OPS.2026-11-21-18.garbage.gz`, 'this is not a CloudFront log\nat all\n');
    await sendBodies(queues.dlqUrl, [...set.refs.map(notificationBody), 'not json {', notificationBody(garbage)]);
    const env = operatorEnv(info, queues);
    const before = await countersOf(set, DAYS);

    const first = captureIo();
    const firstCode = await runReplay(['--inline'], first, env);
    const afterFirst = await countersOf(set, DAYS);
    const second = captureIo();
    const secondCode = await runReplay(['--inline'], second, env);
    const afterSecond = await countersOf(set, DAYS);

    expect(before.got).not.toEqual(before.want);
    expect(afterFirst.got).toEqual(afterFirst.want);
    expect(afterSecond.got).toEqual(afterFirst.want);
    expect([firstCode, secondCode]).toEqual([1, 1]);
    expect(first.stdout).toMatch(/received 5 message\(s\): processed 3, skipped 0, failed 2 \(kept in the DLQ\); deleted from the DLQ 3/);
    expect(first.stdout).toMatch(/increments applied \d+, already applied 3\)/);
    expect(first.stdout).toMatch(/poison +PoisonMessageError: message [\w-]+: body is not JSON/);
    expect(first.stdout).toMatch(/poison +PoisonObjectError: object s3:\/\/[^ ]+garbage\.gz: not a CloudFront log/);
    expect(second.stdout).toMatch(/received 2 message\(s\): processed 0, skipped 0, failed 2 \(kept in the DLQ\); deleted from the DLQ 0/);
    expect(await dlqHolds(queues.dlqUrl)).toBe(2);
  });

  it('never double counts when replays race each other and a running consumer', async () => {
    const queues = await createTestQueues(info);
    const set = await putLogSet({ days: ['2026-11-21'], hours: [0, 4, 8, 12] });
    for (const [i, ref] of set.refs.entries()) await halfIngest(ref, (i % 2) + 1);
    // Every notification twice in the DLQ, and once more on the ingest queue.
    await sendBodies(queues.dlqUrl, [...set.refs, ...set.refs].map(notificationBody));
    await sendBodies(queues.queueUrl, set.refs.map(notificationBody));
    const env = operatorEnv(info, queues);
    const consumer = startConsumer(queues);

    try {
      const codes = await Promise.all([
        runReplay(['--max', '3'], captureIo(), env),
        runReplay([], captureIo(), env),
        runReplay(['--inline'], captureIo(), env),
      ]);
      await eventually(async () => (await dlqHolds(queues.dlqUrl)) === 0, SHORT_WAIT_MS, 'the DLQ to empty');
      await eventually(async () => {
        const depth = await queueDepth(sqs, queues.queueUrl);
        return depth.visible + depth.inFlight === 0;
      }, SHORT_WAIT_MS, 'the ingest queue to drain');
      const again = captureIo();
      const lastCode = await runReplay([], again, env);

      const { got, want } = await countersOf(set, DAYS);
      expect(codes).toEqual([0, 0, 0]);
      expect(got).toEqual(want);
      expect(lastCode).toBe(0);
      expect(again.stdout).toMatch(/the dead-letter queue is empty: nothing to replay/);
    } finally {
      await consumer.stop();
    }
  });

  it('takes a batch that reached the DLQ through the redrive policy back through the tally binary', async () => {
    const queues = await createTestQueues(info, { visibilityTimeoutSeconds: 1, maxReceiveCount: 2 });
    const set = await putLogSet({ days: ['2026-11-21'], hours: [0, 12] });
    const env = { ...process.env, ...operatorEnv(info, queues) };
    const tally = (...args: string[]) =>
      promisify(execFile)('node', [`${root}/bin/tally.js`, ...args], { cwd: root, env }).then(
        (done) => ({ code: 0, ...done }),
        (failed: { code: number; stdout: string; stderr: string }) => failed,
      );
    const dying = startConsumer(queues, testIngestDeps({ TALLY_INCREMENT_CONCURRENCY: '1' }, { clients: (clients) => crashAfterUpdates(clients.dynamodb, 2) }));
    await sendBodies(queues.queueUrl, set.refs.map(notificationBody));
    await eventually(async () => (await queueDepth(sqs, queues.dlqUrl)).visible === 2, SHORT_WAIT_MS, 'both messages to be dead-lettered');
    await dying.stop();

    const dryRun = await tally('replay', '--dry-run');
    const replay = await tally('replay');
    const consumer = startConsumer(queues);
    try {
      await eventually(async () => {
        const { got, want } = await countersOf(set, DAYS);
        return isDeepStrictEqual(got, want);
      }, SHORT_WAIT_MS, 'exact counts');
    } finally {
      await consumer.stop();
    }

    expect(dryRun.code).toBe(0);
    expect(dryRun.stdout).toMatch(/dry run: 2 message\(s\) in the dead-letter queue; nothing was sent, processed or deleted/);
    expect(dryRun.stdout).toContain(set.refs[0]!.key);
    expect(replay.code).toBe(0);
    expect(replay.stdout).toMatch(/received 2 message\(s\): re-sent 2, skipped 0, failed 0 \(kept in the DLQ\); deleted from the DLQ 2/);
    expect((await countersOf(set, DAYS)).got).toEqual((await countersOf(set, DAYS)).want);
    expect(await dlqHolds(queues.dlqUrl)).toBe(0);
  });

  it('keeps in the DLQ, names and exits 1 for notifications tally dlq list calls poison (object gone, replaced, no log): never re-sent', async () => {
    const queues = await createTestQueues(info);
    const set = await putLogSet({ days: ['2026-11-21'], hours: [0] });
    const garbage = await putLogObject(`${set.prefix}E2OPS.2026-11-21-18.garbage.gz`, 'this is not a CloudFront log\nat all\n');
    const gone = { ...set.refs[0]!, key: `${set.prefix}E2OPS.2026-11-21-19.never-written.gz` };
    const replaced = { ...set.refs[0]!, etag: '0123456789abcdef0123456789abcdef' };
    await sendBodies(queues.dlqUrl, [notificationBody(set.refs[0]!), notificationBody(garbage), notificationBody(gone), notificationBody(replaced)]);
    const env = operatorEnv(info, queues);

    const dry = captureIo();
    const dryCode = await runReplay(['--dry-run'], dry, env);
    const io = captureIo();
    const code = await runReplay([], io, env);

    expect(dryCode).toBe(0);
    expect(dry.stdout).toMatch(/a replay would take 1 and leave 3 poison message\(s\) in the DLQ/);
    expect(code).toBe(1);
    expect(io.stdout).toMatch(/received 4 message\(s\): re-sent 1, skipped 0, failed 3 \(kept in the DLQ\); deleted from the DLQ 1/);
    expect(io.stdout).toMatch(/poison +.*not a CloudFront log/);
    expect(io.stdout).toMatch(/poison +object does not exist in S3/);
    expect(io.stdout).toMatch(/poison +.*another ETag|poison +.*replaced|poison +.*other content/);
    expect(io.stdout).toMatch(/poison messages stay in the DLQ until dropped/);
    expect(await dlqHolds(queues.dlqUrl)).toBe(3);
    expect((await queueDepth(sqs, queues.queueUrl)).visible).toBe(1);
  });
});
