import {
  GetItemCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { AdjustmentStore, RecordOutcome } from '../../app/ports';
import { adjustmentDifferences, type Adjustment, type RecordedAdjustment } from '../../domain/counters/adjustment';
import { AdjustmentConflictError } from '../../domain/errors';
import { adjustmentIdKey, adjustmentItemKey, parseAccountSortKey, type TableKey } from '../../domain/counters/keys';
import { FIRST_DAY, LAST_DAY, queryDayRange } from './day-range-query';

const MAX_CONFLICT_RETRIES = 5;

/**
 * Adjustments in the usage table, next to the shards they correct:
 *
 * ```
 * PK ACCT#acme  SK DAY#2026-11-21#A#INC-2041   adjustment: metric, delta, reason, createdAt, actor
 * PK ACCT#acme  SK ADJID#INC-2041              the id's reservation: same content, any day
 * PK ACCT#acme  SK ADJID#revert:INC-2041       a revert of it (`revertOf: INC-2041`), at most one
 * ```
 * Both are put in one transaction, each only if absent, so an id is recorded once per
 * account whatever day it names. Recording it again with the same content is a no-op
 * ("already recorded"); with other content it fails with {@link AdjustmentConflictError}.
 * Measured counters are never touched.
 */
export class DynamoAdjustmentStore implements AdjustmentStore {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;
  private readonly clock: () => Date;

  constructor({ client, tableName, clock }: { client: DynamoDBClient; tableName: string; clock?: () => Date }) {
    this.client = client;
    this.tableName = tableName;
    this.clock = clock ?? (() => new Date());
  }

  /** Records `adjustment` once; see the class comment for what a second attempt does. */
  async record(adjustment: Adjustment, actor: string): Promise<RecordOutcome> {
    const recorded: RecordedAdjustment = { ...adjustment, actor, createdAt: this.clock().toISOString() };
    const itemKey = adjustmentItemKey({ accountId: adjustment.account, day: adjustment.day, adjustmentId: adjustment.adjustmentId });
    const idKey = adjustmentIdKey({ accountId: adjustment.account, adjustmentId: adjustment.adjustmentId });
    const put = (key: TableKey) => ({
      Put: {
        TableName: this.tableName,
        Item: { PK: { S: key.PK }, SK: { S: key.SK }, ...attributesOf(recorded) },
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    });
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.send(new TransactWriteItemsCommand({ TransactItems: [put(itemKey), put(idKey)] }));
        return { outcome: 'recorded', adjustment: recorded };
      } catch (error) {
        if (!(error instanceof TransactionCanceledException)) throw error;
        const reasons = error.CancellationReasons ?? [];
        if (reasons.some((reason) => reason.Code === 'ConditionalCheckFailed')) return this.alreadyRecorded(adjustment, itemKey, error);
        // Another writer of the same id was mid-transaction: try again, then it has either won or gone.
        if (!reasons.some((reason) => reason.Code === 'TransactionConflict') || attempt >= MAX_CONFLICT_RETRIES) throw error;
        await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** attempt * Math.random()));
      }
    }
  }

  /** The id is taken: the same correction again is a no-op, another one a conflict. */
  private async alreadyRecorded(adjustment: Adjustment, itemKey: TableKey, error: unknown): Promise<RecordOutcome> {
    // An item written without its reservation (by another tool) still blocks the id.
    const stored = (await this.find(adjustment.account, adjustment.adjustmentId)) ?? (await this.readItem(itemKey, adjustment.account));
    if (stored === undefined) throw error;
    return { outcome: 'already-recorded', adjustment: sameOrConflict(stored, adjustment, error) };
  }

  /**
   * What {@link record} would do, without writing: `recorded` when the id is free,
   * `already-recorded` when it holds the same content; a conflict throws.
   */
  async preview(adjustment: Adjustment): Promise<'recorded' | 'already-recorded'> {
    const stored =
      (await this.find(adjustment.account, adjustment.adjustmentId)) ??
      (await this.readItem(
        adjustmentItemKey({ accountId: adjustment.account, day: adjustment.day, adjustmentId: adjustment.adjustmentId }),
        adjustment.account,
      ));
    if (stored === undefined) return 'recorded';
    sameOrConflict(stored, adjustment);
    return 'already-recorded';
  }

  /** The adjustment recorded under `adjustmentId` for `account`, whatever its day. */
  async find(account: string, adjustmentId: string): Promise<RecordedAdjustment | undefined> {
    return this.readItem(adjustmentIdKey({ accountId: account, adjustmentId }), account);
  }

  /**
   * Adjustments of `account` dated `from..to` (all days when absent), by day then
   * creation time: the items the read API adds into totals.
   */
  async list(account: string, from = FIRST_DAY, to = LAST_DAY): Promise<RecordedAdjustment[]> {
    const found: RecordedAdjustment[] = [];
    // Usage shards share the range; only adjustments carry a delta.
    const pages = queryDayRange({
      client: this.client,
      tableName: this.tableName,
      accountId: account,
      from,
      to,
      consistentRead: true,
      filter: { attribute: 'delta', present: true },
    });
    for await (const items of pages) {
      for (const item of items) {
        const parsed = parseAccountSortKey(item.SK?.S ?? '');
        if (parsed?.kind === 'adjustment') found.push(fromItem(item, account, parsed.day, parsed.adjustmentId));
      }
    }
    return found.sort((a, b) => (a.day === b.day ? a.createdAt.localeCompare(b.createdAt) : a.day.localeCompare(b.day)));
  }

  private async readItem(key: TableKey, account: string): Promise<RecordedAdjustment | undefined> {
    const { Item } = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: { PK: { S: key.PK }, SK: { S: key.SK } }, ConsistentRead: true }),
    );
    if (Item === undefined) return undefined;
    const parsed = parseAccountSortKey(key.SK);
    return fromItem(
      Item,
      account,
      parsed?.day ?? Item.day?.S ?? '',
      parsed?.kind === 'adjustment' ? parsed.adjustmentId : (Item.adjustmentId?.S ?? ''),
    );
  }
}

function sameOrConflict(stored: RecordedAdjustment, wanted: Adjustment, cause?: unknown): RecordedAdjustment {
  const differences = adjustmentDifferences(stored, wanted);
  if (differences.length > 0) throw new AdjustmentConflictError(wanted.adjustmentId, differences, cause === undefined ? undefined : { cause });
  return stored;
}

function attributesOf(adjustment: RecordedAdjustment): Record<string, AttributeValue> {
  return {
    account: { S: adjustment.account },
    day: { S: adjustment.day },
    adjustmentId: { S: adjustment.adjustmentId },
    metric: { S: adjustment.metric },
    delta: { N: String(adjustment.delta) },
    reason: { S: adjustment.reason },
    createdAt: { S: adjustment.createdAt },
    actor: { S: adjustment.actor },
    ...(adjustment.revertOf === undefined ? {} : { revertOf: { S: adjustment.revertOf } }),
  };
}

function fromItem(item: Record<string, AttributeValue>, account: string, day: string, adjustmentId: string): RecordedAdjustment {
  return {
    account,
    day: item.day?.S ?? day,
    adjustmentId: item.adjustmentId?.S ?? adjustmentId,
    metric: item.metric?.S ?? '',
    delta: Number(item.delta?.N ?? 0),
    reason: item.reason?.S ?? '',
    createdAt: item.createdAt?.S ?? '',
    actor: item.actor?.S ?? '',
    ...(item.revertOf?.S === undefined ? {} : { revertOf: item.revertOf.S }),
  };
}
