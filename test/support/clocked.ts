import type { SQSEvent } from 'aws-lambda';
import { readConfig } from '../../src/adapters/config';
import { usageStoreFor } from '../../src/adapters/wiring/ingest-deps';
import { incrementKey } from '../../src/domain/counters/idempotency-key';
import { localEnvironment } from '../../src/local/stack';
import type { dieAfterApplying } from './faults';
import { exactRequests, putLogObject, testClients, testIngestDeps, testStackInfo, uniqueId } from './stack';

/**
 * Helpers of the exactly-once tests that drive the store's clock: redelivery chains on
 * the queue's own schedule, operators' runs, skewed clocks. Usage goes to DAY.
 */
export const DAY = '2026-11-21';
export const MINUTE = 60_000;
export const DAYS = 86_400_000;

const info = testStackInfo();
const { dynamodb } = testClients(info);

/** The store's and the flow's clock for one test, moved by the test. */
export class StoreClock {
  constructor(public now = Date.parse(`${DAY}T08:00:00Z`)) {}
  readonly read = (): Date => new Date(this.now);
  advance(ms: number): Date {
    this.now += ms;
    return this.read();
  }
}

/** Ingest deps on the clock, one increment at a time (a deterministic order), the deployed maxReceiveCount. */
export function depsOn(clock: StoreClock, fault?: (client: Parameters<typeof dieAfterApplying>[0]) => void, env: Record<string, string> = {}) {
  return testIngestDeps(
    { TALLY_INCREMENT_CONCURRENCY: '1', TALLY_MAX_RECEIVE_COUNT: '5', ...env },
    { clock: clock.read, ...(fault === undefined ? {} : { clients: (c) => fault(c.dynamodb) }) },
  );
}

/**
 * A busy account-day: `objects` other log objects, each with one request for every
 * account, spread evenly over `minutes` of the clock, through the consumer's store.
 */
export async function busyTraffic(accounts: readonly string[], objects: number, minutes: number, clock: StoreClock, env: Record<string, string> = {}): Promise<void> {
  const config = readConfig({ ...localEnvironment(info), ...env });
  const store = usageStoreFor(config, dynamodb, { clock: clock.read });
  const run = uniqueId('busy');
  for (let i = 0; i < objects; i++) {
    clock.advance((minutes * MINUTE) / objects);
    await Promise.all(
      accounts.map((account) => {
        const { key, shard } = incrementKey({ bucket: info.bucket, key: `${run}/${i}`, etag: 'e' }, account, DAY, config.keyScheme);
        // Its hour, as a counted log line's would be (an increment without hours would leave the day's hours short).
        const hour = new Date(clock.now).getUTCHours();
        return store.applyIncrement({ account, day: DAY, shard, key, metrics: { requests: 1, bytes: 0 }, hours: { [hour]: { requests: 1 } } });
      }),
    );
  }
}

/** One log object with `perAccount` requests for each of `accounts` on DAY. */
export async function objectFor(accounts: readonly string[], perAccount = 1, prefix = 'cloudfront') {
  const text = [
    '#Version: 1.0',
    '#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status',
    ...accounts.flatMap((account) =>
      Array.from({ length: perAccount }, (_, i) => `${DAY}\t00:00:0${i}\tIAD89-C1\t100\t192.0.2.1\tGET\t${account}.example.com\t/x\t200`),
    ),
  ].join('\n');
  return putLogObject(`${prefix}/${uniqueId('E2CHAIN')}.${DAY}-00.x.gz`, `${text}\n`);
}

/** The account's requests on DAY, checked against its hours too (see `exactRequests`). */
export const requestsOf = async (account: string, table = info.table) => exactRequests(dynamodb, table, account, DAY);
export const batch = (...records: SQSEvent['Records']): SQSEvent => ({ Records: records });
export const accountsFor = (name: string, n: number) => Array.from({ length: n }, (_, i) => uniqueId(`${name}${i}`));
