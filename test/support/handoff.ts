import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import { closeDays, type CloseOptions, type CloserDeps, type CloseReport } from '../../src/app/billing/close-days';
import { silentLog } from '../../src/app/log';
import { readCloserConfig } from '../../src/adapters/wiring/handoff-config';
import { createCloserDeps } from '../../src/adapters/wiring/handoff-deps';
import { ensureUsageTable } from '../../src/adapters/dynamodb/usage-table';
import { DEMO_METRICS } from '../../src/local/demo/demo';
import { localEnvironment, type LocalStackInfo } from '../../src/local/stack';
import { testClients, testStackInfo, uniqueId } from './stack';

/**
 * A table of its own for a test file: the closer works on every account of a day, so
 * tests that close days must not see each other's usage.
 */
export async function handoffTable(info: LocalStackInfo = testStackInfo()): Promise<{ table: string; env: Record<string, string>; exportPrefix: string }> {
  const table = uniqueId('handoff');
  await ensureUsageTable(testClients(info).dynamodb, table);
  const exportPrefix = `${uniqueId('exports')}/`;
  return {
    table,
    exportPrefix,
    env: {
      ...localEnvironment(info),
      TALLY_TABLE: table,
      TALLY_METRICS: DEMO_METRICS,
      TALLY_HEARTBEAT_SECONDS: '0',
      TALLY_EXPORT_BUCKET: info.bucket,
      TALLY_EXPORT_PREFIX: exportPrefix,
    },
  };
}

/** The closer wired as the Lambda wires it, on the test stack, at a fixed time. */
export function testCloser(env: Record<string, string>, at: () => Date, extra: Partial<CloserDeps> = {}): CloserDeps {
  const config = readCloserConfig(env);
  // Test clients are destroyed after the file's tests, so no socket keeps the worker alive.
  const clients = testClients();
  return { ...createCloserDeps(config, clients, silentLog, { clock: at }), ...extra };
}

/** Runs the closer and fails the test on a day that failed. */
export async function closeOk(deps: CloserDeps, options: CloseOptions = {}): Promise<CloseReport> {
  const report = await closeDays(deps, options);
  expect(report.days.filter((day) => day.error !== undefined)).toEqual([]);
  return report;
}

/** One request the receiver got. */
export interface ReceivedWebhook {
  readonly body: string;
  readonly signature: string;
  readonly status: number;
}

/**
 * A real HTTP webhook receiver on 127.0.0.1: answers 500 to the first `failFirst`
 * requests, 200 after; remembers every request.
 */
export async function webhookReceiver(options: { failFirst?: number } = {}): Promise<{ url: string; received: ReceivedWebhook[]; close(): Promise<void> }> {
  const received: ReceivedWebhook[] = [];
  let failuresLeft = options.failFirst ?? 0;
  const server: Server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const status = failuresLeft > 0 ? 500 : 200;
      if (failuresLeft > 0) failuresLeft--;
      received.push({ body: Buffer.concat(chunks).toString('utf8'), signature: String(request.headers['tally-signature'] ?? ''), status });
      response.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'try later');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/tally`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** One row of an export as DuckDB reads it back (numbers as numbers). */
export interface ExportedRow {
  readonly account: string;
  readonly day: string;
  readonly revision: number;
  readonly closed_at: string;
  readonly [metric: string]: string | number;
}

/**
 * Copies every export under `prefix` from the emulator's S3 to a temporary folder
 * (keeping the Hive layout) and reads the Parquet and the CSV files back with DuckDB,
 * an independent reader.
 */
export async function readExports(prefix: string, info: LocalStackInfo = testStackInfo()): Promise<{ parquet: ExportedRow[]; csv: ExportedRow[]; files: string[] }> {
  const { s3 } = testClients(info);
  const folder = mkdtempSync(join(tmpdir(), 'tally-exports-'));
  const files: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: info.bucket, Prefix: prefix, ...(token === undefined ? {} : { ContinuationToken: token }) }));
    for (const object of page.Contents ?? []) {
      const body = await (await s3.send(new GetObjectCommand({ Bucket: info.bucket, Key: object.Key! }))).Body!.transformToByteArray();
      const path = join(folder, object.Key!.slice(prefix.length));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, body);
      files.push(object.Key!.slice(prefix.length));
    }
    token = page.NextContinuationToken;
  } while (token !== undefined);
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const read = async (from: string) => {
      const reader = await connection.runAndReadAll(
        `SELECT * EXCLUDE (closed_at), strftime(closed_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%g') || 'Z' AS closed_at FROM ${from} ORDER BY day, revision, account`,
      );
      return reader.getRowObjectsJS().map((row) =>
        Object.fromEntries(Object.entries(row).map(([name, value]) => [name, typeof value === 'bigint' ? Number(value) : value])),
      ) as unknown as ExportedRow[];
    };
    const parquet = files.some((file) => file.endsWith('.parquet')) ? await read(`read_parquet('${folder}/**/*.parquet', hive_partitioning = false)`) : [];
    const csv = files.some((file) => file.endsWith('.csv'))
      ? (await read(`read_csv('${folder}/**/*.csv', header = true, hive_partitioning = false, types = {'closed_at': 'TIMESTAMPTZ', 'day': 'VARCHAR', 'account': 'VARCHAR', 'revision': 'INTEGER', 'requests': 'BIGINT', 'bytes': 'BIGINT', 'authorization_requests': 'BIGINT'})`))
      : [];
    return { parquet, csv, files: files.sort() };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
