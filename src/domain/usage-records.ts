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
