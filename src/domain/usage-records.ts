/**
 * What the table holds for an account on a day, as the read side sees it: measured
 * usage (one record per shard) and operator adjustments (one record each).
 */
export type UsageRecord =
  | {
      readonly kind: 'usage';
      readonly day: string;
      readonly shard: number;
      readonly metrics: Readonly<Record<string, number>>;
      readonly updatedAt?: string;
    }
  | {
      readonly kind: 'adjustment';
      readonly day: string;
      readonly adjustmentId: string;
      readonly metric: string;
      readonly delta: number;
      readonly reason: string;
      readonly createdAt: string;
    };

/** Reads an account's records for a day range: one Query, paginated. */
export interface UsageReader {
  read(accountId: string, from: string, to: string): Promise<{ records: UsageRecord[]; requests: number }>;
}
