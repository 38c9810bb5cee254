import { QueryCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DayLedger, LedgerActivityReader, LedgerObjectOfDay, SourceReader } from '../../app/ports';
import type { LedgerActivity } from '../../domain/reading/health';
import { contributionRowPrefix, decodeContributions, SOURCE_DAY_BUCKETS } from '../../domain/counters/contributions';
import { hourFigures, type ExplainedSource } from '../../domain/reading/explanation';
import { SOURCE_DAY_INDEX, sourceDayBucket } from '../../domain/counters/keys';
import { mapWithConcurrency } from '../../app/concurrency';
import { TableStore } from './query-partition';

/**
 * Finds the log objects that contributed to an account-day through the `bySourceDay`
 * index of the ledger (see contributions.ts): one Query per bucket of the day
 * ({@link SOURCE_DAY_BUCKETS}), filtered on the account's row, so only that
 * account's objects come back. Reading costs the day's ledger entries of every
 * account (eventually consistent, 0.5 RCU per 4 KB), not only the ones returned.
 */
export class DynamoSourceReader extends TableStore implements SourceReader, LedgerActivityReader, DayLedger {
  async sourcesOf(accountId: string, day: string): Promise<{ sources: ExplainedSource[]; requests: number }> {
    let requests = 0;
    const perBucket = await mapWithConcurrency(
      Array.from({ length: SOURCE_DAY_BUCKETS }, (_, bucket) => bucket),
      SOURCE_DAY_BUCKETS,
      async (bucket) => {
        const found: ExplainedSource[] = [];
        for await (const page of this.pages(sourceDayBucket(day, bucket), contributionRowPrefix(day, accountId))) {
          requests++;
          for (const item of page) {
            const rows = decodeContributions({ metrics: item.cm?.S ?? '', rows: item.c?.S ?? '' }, { day, account: accountId });
            const unresolved = (item.u?.SS ?? []).includes(`${day}\t${accountId}`);
            for (const row of rows) {
              found.push({
                bucket: item.bucket?.S ?? '',
                key: item.key?.S ?? '',
                etag: item.etag?.S ?? '',
                format: item.fmt?.S ?? 'unknown',
                processedAt: item.processedAt?.S ?? '',
                metrics: { ...row.metrics },
                hours: row.hours === undefined ? null : hourFigures(row.hours, []),
                ...(unresolved ? { unresolved: true as const } : {}),
              });
            }
          }
        }
        return found;
      },
    );
    return { sources: perBucket.flat(), requests };
  }

  /**
   * The objects indexed under `day` with their rows of that day (every account's, or
   * `accountId`'s only: then filtered like {@link sourcesOf}), one per object.
   */
  async objectsOn(day: string, accountId?: string): Promise<LedgerObjectOfDay[]> {
    const perBucket = await mapWithConcurrency(
      Array.from({ length: SOURCE_DAY_BUCKETS }, (_, bucket) => bucket),
      SOURCE_DAY_BUCKETS,
      async (bucket) => {
        const found: LedgerObjectOfDay[] = [];
        for await (const page of this.pages(sourceDayBucket(day, bucket), accountId === undefined ? undefined : contributionRowPrefix(day, accountId))) {
          for (const item of page) {
            const contributions = decodeContributions({ metrics: item.cm?.S ?? '', rows: item.c?.S ?? '' }).filter(
              (row) => row.day === day && (accountId === undefined || row.account === accountId),
            );
            const unresolved = (item.u?.SS ?? []).flatMap((entry) => {
              const [onDay = '', account = ''] = entry.split('\t');
              return onDay === day ? [account] : [];
            });
            found.push({ object: { bucket: item.bucket?.S ?? '', key: item.key?.S ?? '', etag: item.etag?.S ?? '' }, contributions, unresolved });
          }
        }
        return found;
      },
    );
    return perBucket.flat();
  }

  /** Every ledger entry indexed under `day` (all accounts): what health reads of the day. */
  async entriesOn(day: string): Promise<LedgerActivity[]> {
    const perBucket = await mapWithConcurrency(
      Array.from({ length: SOURCE_DAY_BUCKETS }, (_, bucket) => bucket),
      SOURCE_DAY_BUCKETS,
      async (bucket) => {
        const found: LedgerActivity[] = [];
        for await (const page of this.pages(sourceDayBucket(day, bucket))) {
          for (const item of page) {
            const lines = item.lines?.M;
            found.push({
              bucket: item.bucket?.S ?? '',
              key: item.key?.S ?? '',
              etag: item.etag?.S ?? '',
              processedAt: item.processedAt?.S ?? '',
              ...(item.us?.SS === undefined ? {} : { unattributedSamples: item.us.SS }),
              ...(lines === undefined
                ? {}
                : {
                    lines: {
                      read: Number(lines.read?.N ?? 0),
                      counted: Number(lines.counted?.N ?? 0),
                      unattributed: Number(lines.unattributed?.N ?? 0),
                      malformed: Number(lines.malformed?.N ?? 0),
                    },
                  }),
            });
          }
        }
        return found;
      },
    );
    return perBucket.flat();
  }

  private async *pages(partition: string, row?: string): AsyncIterable<Record<string, AttributeValue>[]> {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: SOURCE_DAY_INDEX.name,
          KeyConditionExpression: '#sd = :sd',
          ExpressionAttributeNames: { '#sd': SOURCE_DAY_INDEX.partitionKey, ...(row === undefined ? {} : { '#c': 'c' }) },
          ExpressionAttributeValues: { ':sd': { S: partition }, ...(row === undefined ? {} : { ':row': { S: row } }) },
          ...(row === undefined ? {} : { FilterExpression: 'contains(#c, :row)' }),
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      yield page.Items ?? [];
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
  }
}
