import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { parquetWriteBuffer } from 'hyparquet-writer';
import type { RevisionExports } from '../../app/ports';
import { revisionCsv, revisionExportKeys, type RevisionExport } from '../../domain/billing/revision-export';

/**
 * Writes a revision's `usage.parquet` and `usage.csv` under
 * `<prefix>day=<day>/revision=<n>/` (Hive partitions). Parquet is written by
 * `hyparquet-writer` (pure JavaScript, no native code, so it bundles for Lambda):
 *
 * | column | Parquet type |
 * |---|---|
 * | `account`, `day` | BYTE_ARRAY (UTF-8 string) |
 * | `revision` | INT32 |
 * | `closed_at` | INT64 TIMESTAMP(MILLIS, UTC) |
 * | one per metric | INT64 |
 *
 * Nothing in the file depends on when it is written, so writing a revision again puts
 * the same bytes.
 */
export class S3RevisionExports implements RevisionExports {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor({ client, bucket, prefix }: { client: S3Client; bucket: string; prefix: string }) {
    this.client = client;
    this.bucket = bucket;
    this.prefix = prefix;
  }

  async write(table: RevisionExport): Promise<{ parquet: string; csv: string }> {
    const keys = revisionExportKeys(this.prefix, table.day, table.revision);
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: keys.parquet, Body: revisionParquet(table), ContentType: 'application/vnd.apache.parquet' }),
    );
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: keys.csv, Body: revisionCsv(table), ContentType: 'text/csv; charset=utf-8' }));
    return { parquet: `s3://${this.bucket}/${keys.parquet}`, csv: `s3://${this.bucket}/${keys.csv}` };
  }
}

/** The revision as a Parquet file (see {@link S3RevisionExports} for the schema). */
export function revisionParquet(table: RevisionExport): Uint8Array {
  const count = table.rows.length;
  const closedAt = new Date(table.closedAt);
  const buffer = parquetWriteBuffer({
    columnData: [
      { name: 'account', data: table.rows.map((row) => row.account), type: 'STRING', nullable: false },
      { name: 'day', data: Array.from({ length: count }, () => table.day), type: 'STRING', nullable: false },
      { name: 'revision', data: Int32Array.from({ length: count }, () => table.revision), type: 'INT32', nullable: false },
      { name: 'closed_at', data: Array.from({ length: count }, () => closedAt), type: 'TIMESTAMP', nullable: false },
      ...table.metricNames.map((name) => ({
        name,
        data: BigInt64Array.from(table.rows, (row) => BigInt(row.metrics[name] ?? 0)),
        type: 'INT64' as const,
        nullable: false,
      })),
    ],
    createdBy: 'tally',
  });
  return new Uint8Array(buffer);
}
