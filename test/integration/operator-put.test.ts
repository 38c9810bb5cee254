import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { PUT_PART_BYTES, type PutLogResult } from '../../src/app/ingest/put-logs';
import { S3LogSink } from '../../src/adapters/s3/s3-log-sink';
import { normaliseEtag } from '../../src/domain/counters/log-object';
import { parseNotification } from '../../src/domain/counters/notifications';
import { generateLog, type ExpectedCount } from '../../src/local/demo/log-generator';
import { queueDepth } from '../../src/local/pipeline/poller';
import { REPO_ROOT, runTallyBin, tallyCommand } from '../support/cli';
import { expectedUsage, gzip, jsonLog, traffic } from '../support/log-formats';
import { parquetFromJsonLines } from '../support/parquet-logs';
import { captureIo, consumeUntilDrained, operatorEnv } from '../support/operator';
import { createTestQueues, nonZero, readCounters, testClients, testStackInfo, uniqueId } from '../support/stack';

const put = tallyCommand('put');
const info = testStackInfo();
const { sqs, s3, dynamodb } = testClients(info);

/** What one `tally put --json` run said: its exit code and the objects it reports (none when it failed). */
interface PutRun {
  code: number;
  objects: PutLogResult[];
  stderr: string;
}

/** Runs `tally put --json ...args` in `dir`. */
async function putJson(args: string[], env: Record<string, string>, dir: string): Promise<PutRun> {
  const io = captureIo();
  const code = await put(['--json', ...args], io, env, dir);
  return { code, objects: code === 0 ? (JSON.parse(io.stdout) as { objects: PutLogResult[] }).objects : [], stderr: io.stderr };
}

/** Counted once: each account's counters of `days` equal what one copy of `log` holds. */
async function expectCountedOnce(log: { expected: ExpectedCount }, accounts: readonly string[], days: readonly string[]): Promise<void> {
  for (const account of accounts) {
    const counters = await readCounters(dynamodb, info.table, account, days[0]!, days[days.length - 1]!);
    for (const day of days) {
      expect([account, day, nonZero(counters[day])]).toEqual([account, day, nonZero(log.expected.usage.get(`${account}|${day}`))]);
    }
  }
}

/** The folders the tests write their log files in, removed when the file's tests end (they were left in /tmp). */
const tempDirs: string[] = [];
function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

describe('tally put', () => {
  it('puts a file and sends the notification S3 would; the same file put twice counts once', async () => {
    const queues = await createTestQueues(info);
    const prefix = `cloudfront/${uniqueId('put')}/`;
    const accounts = [uniqueId('puta'), uniqueId('putb')];
    const log = generateLog({ seed: 11, day: '2026-11-21', hour: 7, distribution: 'E2PUT', accounts: accounts.map((id) => ({ id, weight: 1 })), lines: 80 });
    const dir = tempDir('tally-put-');
    writeFileSync(join(dir, 'access.log.gz'), gzipSync(log.text));
    const env = operatorEnv(info, { queueUrl: queues.queueUrl, dlqUrl: queues.dlqUrl, prefix });

    const runs = [await putJson(['access.log.gz'], env, dir), await putJson(['access.log.gz'], env, dir)];
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 0 }));
    const head = await s3.send(new HeadObjectCommand({ Bucket: info.bucket, Key: runs[0]!.objects[0]!.object.key }));
    await consumeUntilDrained(queues);

    expect(runs.map((run) => run.code)).toEqual([0, 0]);
    const [first, second] = runs.map((run) => run.objects[0]!);
    expect(first!.object.key).toMatch(new RegExp(`^${prefix}E2TALLYPUT\\.2026-11-21-07\\.[0-9a-f]{8}\\.gz$`));
    expect(second!.object).toMatchObject({ key: first!.object.key, etag: first!.object.etag });
    expect([first!.before, second!.before]).toEqual(['new', 'same']);
    // The notification carries the object's real ETag and size, and a sequencer that grows.
    expect(first!.object.etag).toBe(normaliseEtag(head.ETag!));
    const notified = Messages.map((message) => parseNotification(message.Body!, message.MessageId!));
    expect(notified).toHaveLength(2);
    for (const notification of notified) {
      expect(notification).toEqual({ kind: 'objects', objects: [expect.objectContaining({ bucket: info.bucket, key: first!.object.key, etag: first!.object.etag, size: head.ContentLength })], createdAt: expect.any(String) });
    }
    expect(second!.object.sequencer! > first!.object.sequencer!).toBe(true);
    await expectCountedOnce(log, accounts, ['2026-11-20', '2026-11-21']);
    expect(await queueDepth(sqs, queues.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
  });

  it('puts a file larger than a part in parts (S3 multipart), byte for byte: the dry run foresees its ETag, put again it is the same object, counted once', async () => {
    const queues = await createTestQueues(info);
    const prefix = `cloudfront/${uniqueId('putbig')}/`;
    const accounts = [uniqueId('biga'), uniqueId('bigb')];
    // About 20 MiB of plain text: three parts of 8 MiB (more than the emulator takes in one request, 11 MiB).
    const log = generateLog({ seed: 5, day: '2026-11-22', hour: 9, distribution: 'E2BIG', accounts: accounts.map((id) => ({ id, weight: 1 })), lines: 62_000 });
    const dir = tempDir('tally-put-big-');
    try {
      writeFileSync(join(dir, 'big.log'), log.text);
      const bytes = readFileSync(join(dir, 'big.log'));
      expect(bytes.length).toBeGreaterThan(16 * 1024 * 1024);
      expect(bytes.length).toBeLessThan(24 * 1024 * 1024);
      const env = operatorEnv(info, { queueUrl: queues.queueUrl, dlqUrl: queues.dlqUrl, prefix });

      const runs: PutRun[] = [];
      for (const args of [['--dry-run'], [], []]) {
        const run = await putJson([...args, 'big.log'], env, dir);
        if (run.code !== 0) throw new Error(`tally put ${args.join(' ')} exit ${run.code}: ${run.stderr}`);
        runs.push(run);
      }
      const [dry, first, again] = runs.map((run) => run.objects[0]!);
      const stored = await s3.send(new GetObjectCommand({ Bucket: info.bucket, Key: first!.object.key }));
      const content = Buffer.from(await stored.Body!.transformToByteArray());
      await consumeUntilDrained(queues);

      expect(content.equals(bytes)).toBe(true);
      // S3's ETag of an object put in parts: MD5 of the parts' MD5s, then the number of parts.
      expect(first!.object).toMatchObject({ etag: expect.stringMatching(/^[0-9a-f]{32}-3$/), size: bytes.length });
      expect(first!.object.etag).toBe(normaliseEtag(stored.ETag!));
      expect(first!.object.key).toMatch(new RegExp(`^${prefix}E2TALLYPUT\\.2026-11-22-09\\.[0-9a-f]{8}$`));
      expect(dry!.object).toMatchObject({ key: first!.object.key, etag: first!.object.etag, size: bytes.length });
      expect([dry!.before, first!.before, again!.before]).toEqual(['new', 'new', 'same']);
      expect(again!.object).toMatchObject({ key: first!.object.key, etag: first!.object.etag });
      await expectCountedOnce(log, accounts, ['2026-11-22']);
      expect(await queueDepth(sqs, queues.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('holds no file whole: its peak memory is the same for a file of 16 MB and one of 146 MB', async () => {
    const queues = await createTestQueues(info);
    const dir = tempDir('tally-put-memory-');
    try {
      const log = generateLog({ seed: 9, day: '2026-11-22', hour: 10, distribution: 'E2MEM', accounts: [{ id: 'memory', weight: 1 }], lines: 50_000 });
      const [header, body] = [log.text.slice(0, log.text.indexOf('\n', log.text.indexOf('#Fields')) + 1), log.text.slice(log.text.indexOf('\n', log.text.indexOf('#Fields')) + 1)];
      writeFileSync(join(dir, 'small.log'), log.text);
      writeFileSync(join(dir, 'large.log'), header);
      for (let i = 0; i < 9; i++) appendFileSync(join(dir, 'large.log'), body);
      const env = { ...process.env, ...operatorEnv(info, { queueUrl: queues.queueUrl, prefix: `cloudfront/${uniqueId('putmem')}/` }), NODE_OPTIONS: `--require ${join(__dirname, '..', 'support', 'max-rss.cjs')}` };

      const peak: Record<string, number> = {};
      for (const file of ['small.log', 'large.log', 'small.log', 'large.log']) {
        const run = await runTallyBin(['put', '--dry-run', file], { env, cwd: dir });
        expect([file, run.code, run.stderr.replace(/^max-rss-kib \d+\n/m, '')]).toEqual([file, 0, '']);
        peak[file] = Math.min(peak[file] ?? Infinity, Number(/^max-rss-kib (\d+)$/m.exec(run.stderr)![1]) / 1024);
      }

      // Holding the large file would cost 130 MB more; what differs is the reading's garbage (well under a part of 8 MiB more than that).
      expect(peak['large.log']! - peak['small.log']!).toBeLessThan(48);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('makes no object of a body that fails part way (a file that changed since it was counted): the upload is aborted', async () => {
    const key = `cloudfront/${uniqueId('putabort')}/E2ABORT.2026-11-22-09.abcd1234.gz`;
    const part = Buffer.alloc(PUT_PART_BYTES, 0x61);
    const body = {
      size: 3 * PUT_PART_BYTES,
      async *parts() {
        yield part;
        yield part;
        throw new Error('file x.log: changed since it was counted');
      },
    };

    const sent: string[] = [];
    s3.middlewareStack.add((next, context) => (args) => (sent.push(context.commandName!), next(args)), { step: 'initialize', name: 'putAbortCommands' });
    try {
      await expect(new S3LogSink({ client: s3 }).put(info.bucket, key, body)).rejects.toThrow('changed since it was counted');
    } finally {
      s3.middlewareStack.remove('putAbortCommands');
    }

    expect(sent).toEqual(['CreateMultipartUploadCommand', 'UploadPartCommand', 'UploadPartCommand', 'AbortMultipartUploadCommand']);
    await expect(s3.send(new HeadObjectCommand({ Bucket: info.bucket, Key: key }))).rejects.toMatchObject({ name: 'NotFound' });
  });

  it('refuses when the target is AWS, before reading a file or calling any service', async () => {
    const io = captureIo();
    const env = {
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'example',
      TALLY_TABLE: 'tally-prod-usage',
      TALLY_INGEST_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tally-prod-ingest',
      TALLY_LOG_BUCKET: 'tally-prod-logs',
    };

    const code = await put(['no-such-file.gz'], io, env, '/nonexistent');

    expect(code).toBe(2);
    expect(io.stdout).toBe('');
    expect(io.stderr).toMatch(/^tally put: the target is AWS \(flags and environment: tally-prod-usage in eu-west-1\), and put feeds the local stack only/);
  });

  /** Only Date is faked: the SDK's timers and sockets run as ever, the clock reads `at`. */
  const clockAt = (at: Date) =>
    jest.useFakeTimers({ now: at, doNotFake: ['hrtime', 'nextTick', 'performance', 'queueMicrotask', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] });

  it('names v2 JSON and Parquet files by their requests, never the clock: put again an hour later, the same object, counted once', async () => {
    const queues = await createTestQueues(info);
    const prefix = `cloudfront/${uniqueId('putv2')}/`;
    const jsonAccounts = [uniqueId('putj'), uniqueId('putk')];
    const parquetAccounts = [uniqueId('putp'), uniqueId('putq')];
    const jsonRequests = traffic(60, jsonAccounts, 3);
    const parquetRequests = traffic(40, parquetAccounts, 5);
    const dir = tempDir('tally-put-v2-');
    writeFileSync(join(dir, 'v2.json.gz'), gzip(jsonLog(jsonRequests)));
    writeFileSync(join(dir, 'v2.parquet'), await parquetFromJsonLines(jsonLog(parquetRequests)));
    const env = operatorEnv(info, { queueUrl: queues.queueUrl, dlqUrl: queues.dlqUrl, prefix });

    const runs: PutRun[] = [];
    try {
      for (const at of [new Date('2026-11-23T13:45:00Z'), new Date('2026-11-23T14:45:00Z')]) {
        clockAt(at);
        runs.push(await putJson(['v2.json.gz', 'v2.parquet'], env, dir));
      }
    } finally {
      jest.useRealTimers();
    }
    await consumeUntilDrained(queues, 30_000);

    expect(runs.map((run) => run.code)).toEqual([0, 0]);
    const [first, second] = runs.map((run) => run.objects.map((result) => [result.object.key, result.before, result.hourFrom]));
    expect(first).toEqual([
      [expect.stringMatching(new RegExp(`^${prefix}E2TALLYPUT\\.2026-11-20-22\\.[0-9a-f]{8}\\.gz$`)), 'new', 'content'],
      [expect.stringMatching(new RegExp(`^${prefix}E2TALLYPUT\\.2026-11-20-00\\.[0-9a-f]{8}$`)), 'new', 'first-day'],
    ]);
    expect(second).toEqual(first!.map(([key, , from]) => [key, 'same', from]));
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: info.bucket, Prefix: prefix }));
    expect(listed.KeyCount).toBe(2);
    for (const [requests, accounts] of [[jsonRequests, jsonAccounts], [parquetRequests, parquetAccounts]] as const) {
      const expected = expectedUsage(requests);
      for (const account of accounts) {
        const counters = await readCounters(dynamodb, info.table, account, '2026-11-20', '2026-11-21');
        for (const day of ['2026-11-20', '2026-11-21']) {
          const { requests = 0, bytes = 0 } = counters[day] ?? {};
          expect([account, day, { requests, bytes }]).toEqual([account, day, expected[account]?.[day] ?? { requests: 0, bytes: 0 }]);
        }
      }
    }
    expect(await queueDepth(sqs, queues.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
  });

  it('refuses the files tally count refuses, an empty one and one of no dated request, in its words; puts and sends nothing', async () => {
    const queues = await createTestQueues(info);
    const prefix = `cloudfront/${uniqueId('putbad')}/`;
    const dir = tempDir('tally-put-bad-');
    writeFileSync(join(dir, 'notes.txt'), 'hello\nnot a log at all\n');
    writeFileSync(join(dir, 'notes.gz'), 'hello\nnot a log at all\n');
    writeFileSync(join(dir, 'empty.log'), '');
    copyFileSync(join(REPO_ROOT, 'fixtures', 'logs', 'truncated.log.gz'), join(dir, 'truncated.log.gz'));
    copyFileSync(join(REPO_ROOT, 'fixtures', 'logs', 'header-only.log.gz'), join(dir, 'header-only.log.gz'));
    mkdirSync(join(dir, 'a-folder'));
    const env = operatorEnv(info, { queueUrl: queues.queueUrl, dlqUrl: queues.dlqUrl, prefix });

    const outcomes: [string, number, string][] = [];
    for (const file of ['notes.txt', 'notes.gz', 'empty.log', 'truncated.log.gz', 'header-only.log.gz', 'a-folder']) {
      const io = captureIo();
      outcomes.push([file, await put([file], io, env, dir), io.stderr]);
    }
    const counted = captureIo();
    for (const file of ['notes.gz', 'truncated.log.gz']) await tallyCommand('count')([file], counted, env, dir);
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: info.bucket, Prefix: prefix }));

    const countSays = (file: string) => counted.stderr.split('\n').find((line) => line.includes(`file ${file}:`)) ?? `(tally count said nothing of ${file})`;
    expect(outcomes.map(([file, code]) => [file, code])).toEqual(outcomes.map(([file]) => [file, 2]));
    const said = Object.fromEntries(outcomes.map(([file, , stderr]) => [file, stderr]));
    expect(said['notes.txt']).toMatch(/^tally put: file notes\.txt: not a CloudFront log: 2 data lines and no #Fields header .*; nothing was put\n$/);
    expect(said['notes.gz']).toBe(`${countSays('notes.gz').replace('tally count:', 'tally put:')}; nothing was put\n`);
    expect(said['truncated.log.gz']).toBe(`${countSays('truncated.log.gz').replace('tally count:', 'tally put:')}; nothing was put\n`);
    expect(said['empty.log']).toBe('tally put: file empty.log: empty: nothing to count; nothing was put\n');
    // tryout: a directory said "EISDIR: illegal operation on a directory, read", exit 1.
    expect(said['a-folder']).toBe('tally put: file a-folder: is a folder, not a log file\n');
    expect(said['header-only.log.gz']).toBe('tally put: file header-only.log.gz: no request line with a day: nothing to count (tally count header-only.log.gz shows its lines)\n');
    expect(listed.KeyCount ?? 0).toBe(0);
    expect(await queueDepth(sqs, queues.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
  });

  it('refuses files whose keys under a long prefix would pass S3\'s 1,024 bytes, before any is put', async () => {
    const queues = await createTestQueues(info);
    // 989 bytes: the first file's made name (33 bytes) fits under it, the second's own name (39) does not.
    const start = `cloudfront/${uniqueId('putlong')}/`;
    const prefix = `${start}${'p'.repeat(988 - start.length)}/`;
    const log = generateLog({ seed: 12, day: '2026-11-21', hour: 7, distribution: 'E2PUT', accounts: [{ id: uniqueId('putlong'), weight: 1 }], lines: 5 });
    const dir = tempDir('tally-put-long-');
    writeFileSync(join(dir, 'a.log'), log.text);
    writeFileSync(join(dir, 'E2PUTLONGNAME.2026-11-21-07.abcdef12.gz'), gzipSync(log.text));
    const env = operatorEnv(info, { queueUrl: queues.queueUrl, dlqUrl: queues.dlqUrl, prefix });

    const run = await putJson(['a.log', 'E2PUTLONGNAME.2026-11-21-07.abcdef12.gz'], env, dir);
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: info.bucket, Prefix: start }));

    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`tally put: file E2PUTLONGNAME.2026-11-21-07.abcdef12.gz: its key under the prefix would be 1028 bytes, and an S3 key is at most 1024: choose a shorter --prefix; nothing was put\n`);
    expect(listed.KeyCount ?? 0).toBe(0);
    expect(await queueDepth(sqs, queues.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
  });

  it('refuses a CloudFront-named file whose name holds a control character, before any file is put', async () => {
    const queues = await createTestQueues(info);
    const prefix = `cloudfront/${uniqueId('putctl')}/`;
    const log = generateLog({ seed: 13, day: '2026-11-21', hour: 7, distribution: 'E2PUT', accounts: [{ id: uniqueId('putctl'), weight: 1 }], lines: 5 });
    const dir = tempDir('tally-put-ctl-');
    const odd = 'E2PUT.2026-11-21-07.ab\ncd.gz';
    writeFileSync(join(dir, 'a.log'), log.text);
    writeFileSync(join(dir, odd), gzipSync(log.text));
    const env = operatorEnv(info, { queueUrl: queues.queueUrl, dlqUrl: queues.dlqUrl, prefix });

    const run = await putJson(['a.log', odd], env, dir);
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: info.bucket, Prefix: prefix }));

    expect(run.code).toBe(2);
    expect(run.stderr).toBe('tally put: file E2PUT.2026-11-21-07.ab?cd.gz: its name cannot be part of an S3 key as it is: it holds a control character (a newline, a tab, an escape...); put a copy under another name; nothing was put\n');
    expect(listed.KeyCount ?? 0).toBe(0);
    expect(await queueDepth(sqs, queues.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
  });
});
