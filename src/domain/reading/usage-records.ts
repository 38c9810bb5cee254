import type { HourSums } from '../hours';

/**
 * What the table holds for an account on a day, as the read side sees it: measured
 * usage (one record per shard), operator adjustments (one record each), the recorded
 * revisions of a closed day (one per revision), and the days of the range that are
 * closed (for every account alike).
 */
export type UsageRecord =
  | {
      readonly kind: 'usage';
      readonly day: string;
      readonly shard: number;
      readonly metrics: Readonly<Record<string, number>>;
      /** The shard's sums by UTC hour (its `05R`-style attributes, hours.ts); empty on a shard written before hours. */
      readonly hours?: HourSums;
      readonly updatedAt?: string;
    }
  | {
      /** The day's hours as `tally backfill --hours` recomputed them from its log objects (`DAY#<day>#H#00`), whole. */
      readonly kind: 'hours';
      readonly day: string;
      readonly hours: HourSums;
      /** The shards' hour sums when the backfill read the counters (`dayHours`, hours.ts); absent on older items. */
      readonly atShards?: HourSums;
    }
  | {
      readonly kind: 'adjustment';
      readonly day: string;
      readonly adjustmentId: string;
      readonly metric: string;
      readonly delta: number;
      readonly reason: string;
      readonly createdAt: string;
    }
  | {
      /** This account's figures in revision `revision` of a closed day (1: the closed snapshot). */
      readonly kind: 'revision';
      readonly day: string;
      readonly revision: number;
      readonly metrics: Readonly<Record<string, number>>;
      /** When the revision was recorded. */
      readonly createdAt?: string;
    }
  | {
      /** The day is closed (for every account): its snapshot was recorded at `closedAt`. */
      readonly kind: 'closed-day';
      readonly day: string;
      readonly closedAt: string;
    };
