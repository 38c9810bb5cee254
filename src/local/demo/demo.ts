import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { readMonthToDate } from '../../app/reading/quota-status';
import { DynamoQuotaStore } from '../../adapters/dynamodb/dynamodb-quotas';
import { DynamoUsageReader } from '../../adapters/dynamodb/dynamodb-usage-reader';
import { monthOf, quotaInForce } from '../../domain/billing/quota';
import { addDays, dayOf } from '../../domain/days';
import { normaliseEtag, type LogObjectRef } from '../../domain/counters/log-object';
import { s3EventBody } from '../../domain/counters/notifications';
import { cloudFrontObjectKey, emptyExpected, generateLog, logObjectBody, mergeExpected, v2ObjectKey, type ExpectedCount, type LogObjectFormat } from './log-generator';

export const DEMO_ACCOUNTS = [
  { id: 'acme', weight: 5 },
  { id: 'globex', weight: 3 },
  { id: 'initech', weight: 2 },
  { id: 'umbrella', weight: 1.5 },
  { id: 'hooli', weight: 1 },
] as const;

export const DEMO_DISTRIBUTION = 'E2DEMO7TALLY';
export const DEMO_METRICS = '[{"name":"authorization_requests","path":"/api/authorization/*"}]';

export interface DemoResult {
  readonly objects: LogObjectRef[];
  readonly notificationsSent: number;
  readonly expected: ExpectedCount;
  /** How many objects of each format, for the console. */
  readonly formats: string;
}

function seedOf(day: string, hour: number): number {
  let seed = hour + 1;
  for (const char of day) seed = (Math.imul(seed, 31) + char.charCodeAt(0)) >>> 0;
  return seed;
}

/** One demo log object: where it goes, what it holds and what it must count to. */
export interface DemoLog {
  readonly key: string;
  readonly text: string;
  /** How it is stored: the hour-12 log as standard logging v2 JSON, the hour-18 one as v2 Parquet. */
  readonly format: LogObjectFormat;
  readonly expected: ExpectedCount;
}

/** The format of the demo log of an hour: the demo shows every CloudFront output Tally reads. */
const DEMO_FORMATS: Readonly<Record<number, LogObjectFormat>> = { 0: 'legacy', 6: 'legacy', 12: 'json', 18: 'parquet' };

/**
 * The demo logs for the last `days` days up to `now`: four objects a day (hours 0, 6,
 * 12 and 18, only those already past today; hours 0 and 6 legacy standard logs, 12 v2
 * JSON under plain partitions, 18 v2 Parquet under Hive partitions), five accounts with a weekly rhythm, a
 * little unattributed and malformed traffic, some lines of the previous day.
 */
export function planDemoLogs(now: Date, logPrefix: string, days = 30): DemoLog[] {
  const today = dayOf(now);
  const logs: DemoLog[] = [];
  for (let back = days - 1; back >= 0; back--) {
    const day = addDays(today, -back);
    const weekend = [0, 6].includes(new Date(`${day}T00:00:00Z`).getUTCDay());
    for (const hour of [0, 6, 12, 18]) {
      if (back === 0 && hour > now.getUTCHours()) continue;
      const seed = seedOf(day, hour);
      const log = generateLog({
        seed,
        day,
        hour,
        distribution: DEMO_DISTRIBUTION,
        accounts: DEMO_ACCOUNTS,
        lines: (weekend ? 60 : 120) + (seed % 60),
        unattributedRate: 0.01,
        malformedRate: 0.003,
        previousDayRate: 0.05,
      });
      const format = DEMO_FORMATS[hour] ?? 'legacy';
      const unique = seed.toString(36);
      const key = format === 'legacy' ? cloudFrontObjectKey(logPrefix, DEMO_DISTRIBUTION, day, hour, unique) : v2ObjectKey(logPrefix, DEMO_DISTRIBUTION, day, hour, unique, format);
      logs.push({ key, format, ...log });
    }
  }
  return logs;
}

/**
 * Puts the demo logs into the bucket and sends their S3 notifications (every tenth
 * one twice, as S3 sometimes does). The logs of a day are the same on every run, so
 * a restart that uploads them again changes no count.
 */
export async function uploadDemoLogs(options: {
  s3: S3Client;
  sqs: SQSClient;
  bucket: string;
  logPrefix: string;
  queueUrl: string;
  region: string;
  days?: number;
  now?: Date;
}): Promise<DemoResult> {
  const objects: LogObjectRef[] = [];
  const expected = emptyExpected();
  const plan = planDemoLogs(options.now ?? new Date(), options.logPrefix, options.days);
  for (const log of plan) {
    mergeExpected(expected, log.expected);
    const body = logObjectBody(log.text, log.format);
    const put = await options.s3.send(new PutObjectCommand({ Bucket: options.bucket, Key: log.key, Body: body }));
    objects.push({ bucket: options.bucket, key: log.key, etag: normaliseEtag(put.ETag ?? ''), size: body.length });
  }
  const bodies = objects.flatMap((object, i) => {
    const body = s3EventBody([object], options.region);
    return i % 10 === 9 ? [body, body] : [body];
  });
  for (let i = 0; i < bodies.length; i += 10) {
    await options.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: options.queueUrl,
        Entries: bodies.slice(i, i + 10).map((body, j) => ({ Id: String(j), MessageBody: body })),
      }),
    );
  }
  const counts = { legacy: 0, json: 0, parquet: 0 };
  for (const log of plan) counts[log.format]++;
  const formats = `${counts.legacy} legacy standard logs, ${counts.json} v2 JSON, ${counts.parquet} v2 Parquet`;
  return { objects, notificationsSent: bodies.length, expected, formats };
}

/** The demo account given a requests allowance, and the share of it its month so far has used. */
export const DEMO_QUOTA = { account: 'acme', metric: 'requests', usedShare: 0.9 } as const;

/** What the demo did about acme's quota. */
export interface DemoQuota {
  readonly account: string;
  readonly metric: string;
  /** The allowance in force this month (undefined: acme's own quota starts later). */
  readonly monthly: number | undefined;
  /** True when the demo set it now; false when acme already had one (the user's, or an earlier start's). */
  readonly created: boolean;
}

/**
 * Gives acme a monthly requests allowance of which its month-to-date is about 90%, so
 * that the first threshold run of `npm start` fires its 80% level (and the dashboard
 * shows the bar past the 80% mark, projected past 100%). Only when acme has no requests
 * quota yet: one the user set (README) or an earlier start set is kept as it is.
 */
export async function setDemoQuota(options: { dynamodb: DynamoDBClient; tableName: string; now?: Date }): Promise<DemoQuota> {
  const now = options.now ?? new Date();
  const month = monthOf(now);
  const table = { client: options.dynamodb, tableName: options.tableName };
  const store = new DynamoQuotaStore(table);
  const existing = (await store.list(DEMO_QUOTA.account)).find((quota) => quota.metric === DEMO_QUOTA.metric);
  if (existing !== undefined) {
    return { account: DEMO_QUOTA.account, metric: DEMO_QUOTA.metric, monthly: quotaInForce(existing, month)?.monthly, created: false };
  }
  const used = (await readMonthToDate(new DynamoUsageReader({ ...table, consistentRead: true }), DEMO_QUOTA.account, month, dayOf(now)))[DEMO_QUOTA.metric] ?? 0;
  const monthly = Math.max(1, Math.ceil(used / DEMO_QUOTA.usedShare));
  await store.set({
    account: DEMO_QUOTA.account,
    metric: DEMO_QUOTA.metric,
    period: { from: month, monthly },
    updatedAt: now.toISOString(),
    updatedBy: 'npm start demo',
  });
  return { account: DEMO_QUOTA.account, metric: DEMO_QUOTA.metric, monthly, created: true };
}
