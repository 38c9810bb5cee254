import { ConditionalCheckFailedException, GetItemCommand, PutItemCommand, QueryCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { addDays } from '../../domain/days';
import { ConfigError } from '../../domain/errors';
import { formatShards, shardsOn, type KeyScheme } from '../../domain/counters/idempotency-key';
import { dayShardsKey, HISTORY_CAP_KEY, parseDayShardsSortKey, SETTINGS_PARTITION } from '../../domain/counters/keys';

/** What the table records of the settings every writer must share. */
export interface RecordedSettings {
  /** Each day's shard count, fixed by the day's first increment. */
  readonly shardsByDay: ReadonlyMap<string, number>;
  /** The least history cap any writer of this version used on the table (absent: none yet). */
  readonly leastCap?: number;
}

/**
 * Settings that every writer of a table must share, kept in the table itself rather
 * than in each writer's environment (the consumer's, an operator's inline run, a chaos
 * run): a writer uses what the table records, and refuses to start on settings that
 * disagree with it.
 *
 * ```
 * PK SETTINGS  SK SHARDS#2026-11-21   n: the day's shard count, put (if absent) before the day's first increment
 * PK SETTINGS  SK CAP                 least: the least TALLY_HISTORY_CAP any writer used
 * ```
 * A day's count never changes once recorded, so each writer reads it once per day and
 * keeps it: no request per increment or per object, one `GetItem` (and, for the
 * day's first writer, one conditional `PutItem`) per day and process.
 */
export class TableSettings {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;
  private readonly keyScheme: KeyScheme;
  private readonly days = new Map<string, Promise<number>>();

  constructor({ client, tableName, keyScheme }: { client: DynamoDBClient; tableName: string; keyScheme: KeyScheme }) {
    this.client = client;
    this.tableName = tableName;
    this.keyScheme = keyScheme;
  }

  /**
   * The shard count of `day`: the one the table records, or, for a day without one, this
   * writer's schedule's, recorded first (a conditional put: of two first writers with
   * different schedules, both use the one that landed).
   */
  shardsOn(day: string): Promise<number> {
    let known = this.days.get(day);
    if (known === undefined) {
      known = this.recordedOrFixed(day).catch((error: unknown) => {
        this.days.delete(day);
        throw error;
      });
      this.days.set(day, known);
    }
    return known;
  }

  private async recordedOrFixed(day: string): Promise<number> {
    const recorded = await this.readDay(day);
    if (recorded !== undefined) return recorded;
    const wanted = shardsOn(this.keyScheme, day);
    const key = dayShardsKey(day);
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: { PK: { S: key.PK }, SK: { S: key.SK }, n: { N: String(wanted) } },
          ConditionExpression: 'attribute_not_exists(PK)',
        }),
      );
      return wanted;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const winner = await this.readDay(day);
      if (winner === undefined) throw error;
      return winner;
    }
  }

  private async readDay(day: string): Promise<number | undefined> {
    const key = dayShardsKey(day);
    const output = await this.client.send(new GetItemCommand({ TableName: this.tableName, Key: { PK: { S: key.PK }, SK: { S: key.SK } }, ConsistentRead: true }));
    const n = output.Item?.n?.N;
    return n === undefined ? undefined : Number(n);
  }

  /** Everything the table records (one consistent `Query`). */
  async read(): Promise<RecordedSettings> {
    const shardsByDay = new Map<string, number>();
    let leastCap: number | undefined;
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': { S: SETTINGS_PARTITION } },
          ConsistentRead: true,
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      for (const item of page.Items ?? []) {
        const day = parseDayShardsSortKey(item.SK?.S ?? '');
        if (day !== undefined && item.n?.N !== undefined) shardsByDay.set(day, Number(item.n.N));
        if (item.SK?.S === HISTORY_CAP_KEY.SK && item.least?.N !== undefined) leastCap = Number(item.least.N);
      }
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    return { shardsByDay, ...(leastCap === undefined ? {} : { leastCap }) };
  }

  /**
   * Records `cap` as used on the table, and answers the least cap ever used (the one a
   * proof may take "fewer keys than the cap" of an item from an earlier version against).
   */
  async recordCap(cap: number): Promise<number> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { PK: { S: HISTORY_CAP_KEY.PK }, SK: { S: HISTORY_CAP_KEY.SK } },
          UpdateExpression: 'SET least = :cap',
          ConditionExpression: 'attribute_not_exists(least) OR least > :cap',
          ExpressionAttributeValues: { ':cap': { N: String(cap) } },
        }),
      );
      return cap;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      return (await this.read()).leastCap ?? cap;
    }
  }
}

/**
 * The problems, if any, with writing under `scheme` to a table that records `recorded`,
 * on `today`: a day the table records with another shard count than the schedule gives
 * it (its keys would move shard, and a retry would count them twice), and a change
 * dated before today whose day the table does not record with that count (a change is
 * only for days still to come). Each names the day.
 */
export function shardScheduleConflicts(scheme: KeyScheme, recorded: RecordedSettings, today: string): string[] {
  const conflicts: string[] = [];
  const spelled = formatShards(scheme);
  const days = [...recorded.shardsByDay].sort(([a], [b]) => a.localeCompare(b));
  // The first day a change can still be dated: after today and after every day with data.
  const free = addDays([today, ...days.map(([day]) => day)].reduce((a, b) => (a > b ? a : b)), 1);
  for (const [day, n] of days) {
    const wanted = shardsOn(scheme, day);
    if (wanted !== n) {
      conflicts.push(`TALLY_SHARDS=${spelled} gives ${day} ${wanted} shard(s), but the table records ${n} for it (fixed by its first increment): change the count only for days still to come (e.g. ${n},${wanted}@${free})`);
      break;
    }
  }
  for (const change of scheme.schedule ?? []) {
    if (change.from >= today) continue;
    if (recorded.shardsByDay.get(change.from) === change.shards) continue;
    conflicts.push(`TALLY_SHARDS: the change ${change.shards}@${change.from} is dated before today (${today}) and the table does not record ${change.from} with ${change.shards} shard(s): a change applies only to days still to come`);
  }
  return conflicts;
}

/**
 * Checks this writer's settings against the table before it writes (the consumer's cold
 * start, an inline `tally replay` or `tally backfill`): refuses, naming the day, a shard
 * schedule that disagrees with a day the table records; records the history cap.
 * Answers the least cap ever used on the table, for the store's proof.
 */
export async function checkSettingsAgainstTable(settings: TableSettings, scheme: KeyScheme, historyCap: number, today: string): Promise<{ leastCap: number }> {
  const recorded = await settings.read();
  const conflicts = shardScheduleConflicts(scheme, recorded, today);
  if (conflicts.length > 0) throw new ConfigError(conflicts.join('; '));
  const leastCap = recorded.leastCap !== undefined && recorded.leastCap <= historyCap ? recorded.leastCap : await settings.recordCap(historyCap);
  return { leastCap };
}

/** How far a writer's clock may be from DynamoDB's: the proof's margin for clocks. */
export const CLOCK_MARGIN_MS = 300_000;

/**
 * How far `now` is from DynamoDB's clock, in milliseconds (positive: ahead), from the
 * `Date` header of one small consistent read (HTTP's `Date` is the server's time of the
 * answer, to the second: RFC 9110 §6.6.1). Undefined when the answer carries none.
 */
export async function clockOffsetFromDynamoDb(client: DynamoDBClient, tableName: string, now: () => Date): Promise<number | undefined> {
  let serverDate: string | undefined;
  const command = new GetItemCommand({ TableName: tableName, Key: { PK: { S: HISTORY_CAP_KEY.PK }, SK: { S: HISTORY_CAP_KEY.SK } }, ConsistentRead: true });
  command.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      const headers = (result.response as { headers?: Record<string, string> }).headers ?? {};
      serverDate = headers.date ?? headers.Date;
      return result;
    },
    { step: 'deserialize', name: 'dynamoDbDate' },
  );
  const sent = Date.now();
  await client.send(command);
  const received = Date.now();
  const server = serverDate === undefined ? Number.NaN : Date.parse(serverDate);
  if (!Number.isFinite(server)) return undefined;
  // The header is whole seconds: compare with this clock half-way through the request.
  return now().getTime() - (received - sent) / 2 - server;
}

/**
 * Refuses to write from a machine whose clock is off DynamoDB's by more than the
 * margin (an operator's inline run): its keys would be dated that far off, and its
 * attempt record too.
 */
export async function checkClock(client: DynamoDBClient, tableName: string, now: () => Date): Promise<void> {
  const offset = await clockOffsetFromDynamoDb(client, tableName, now);
  if (offset === undefined || Math.abs(offset) <= CLOCK_MARGIN_MS) return;
  const seconds = Math.round(Math.abs(offset) / 1000);
  const spelled = `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  throw new ConfigError(
    `this machine's clock is ${spelled} ${offset < 0 ? 'behind' : 'ahead of'} DynamoDB's (more than the ${CLOCK_MARGIN_MS / 60_000}-minute margin): set the clock right (NTP) before writing, or run it through the queue instead of --inline`,
  );
}
