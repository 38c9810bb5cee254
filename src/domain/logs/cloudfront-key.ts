import { isValidDay } from '../days';

/**
 * How a log object's key is laid out, as far as Tally reads it:
 * - `name`: only the file name tells: `<dist>.YYYY-MM-DD-HH.<id>.gz` (legacy standard
 *   logs, and v2 deliveries without partitions);
 * - `partitioned`: v2 partitions such as `{DistributionId}/{yyyy}/{MM}/{dd}/{HH}/`;
 * - `hive`: v2 Hive-compatible partitions `DistributionId=E.../year=2025/month=02/day=16/hour=10/`;
 * - `firehose`: a Firehose object `<stream>-<version>-YYYY-MM-DD-HH-MM-SS-<uuid>[.gz]`.
 */
export type KeyLayout = 'name' | 'partitioned' | 'hive' | 'firehose';

/** What a CloudFront log object's key says about the object. */
export interface CloudFrontKey {
  readonly layout: KeyLayout;
  /** UTC day of the hour the object was written for (its lines may hold neighbouring days). */
  readonly day: string;
  /** Undefined when the key names a day but no hour (a `{yyyy}/{MM}/{dd}/` partition). */
  readonly hour?: number;
  /** The CloudFront distribution, when the key names one. */
  readonly distribution?: string;
  /** CloudFront's unique id or Firehose's uuid, when the file name has one. */
  readonly uniqueId?: string;
}

interface KeyTime {
  readonly day: string;
  readonly hour?: number;
}

/** `<dist>.YYYY-MM-DD-HH.<id>` with any extensions after it (`.gz`, `.parquet`, `.log.gz`). */
const STANDARD_NAME = /^(.+)\.(\d{4}-\d{2}-\d{2})-(\d{2})\.([^./]+)(?:\.[A-Za-z0-9]+)*$/;
/** `<stream>-<version>-YYYY-MM-DD-HH-MM-SS-<uuid>` with any extensions after it. */
const FIREHOSE_NAME =
  /^.+-\d+-(\d{4}-\d{2}-\d{2})-(\d{2})-\d{2}-\d{2}-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:\.[A-Za-z0-9]+)*$/i;
/** A CloudFront distribution id as it appears in a partition: `E` and upper-case letters or digits. */
const DISTRIBUTION_ID = /^E[A-Z0-9]{5,}$/;
const HIVE_SEGMENT = /^([A-Za-z]+)=([^=]*)$/;
/**
 * A distribution id at the end of a legacy name's first part, after a log prefix that
 * does not end with a slash: CloudFront puts the prefix before the file name verbatim
 * (`Prefix`: "an optional string that you want CloudFront to prefix to the access log
 * filenames", https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_LoggingConfig.html),
 * so `logs-` gives `logs-E2ABC.2026-11-21-07.a1b2c3.gz`.
 */
const PREFIXED_DISTRIBUTION_ID = /[^A-Z0-9](E[A-Z0-9]{4,})$/;

/**
 * Reads what a CloudFront log object's key says: the day and hour it was written for,
 * its distribution when the key names one, and which layout carries them; `undefined`
 * when the key names no day. Every layout CloudFront and Firehose write is read, under
 * any prefix (`AWSLogs/<account>/CloudFront/`, a chosen log prefix, or none):
 *
 * | layout | example |
 * |---|---|
 * | `name` | `cf/E2ABC.2026-11-21-07.a1b2c3.gz` (or `logs-E2ABC...`: a prefix without a slash) |
 * | `partitioned` | `AWSLogs/123456789012/CloudFront/E2ABC/2026/11/21/07/E2ABC.2026-11-21-07.a1b2c3.parquet` |
 * | `hive` | `AWSLogs/123456789012/CloudFront/DistributionId=E2ABC/year=2026/month=11/day=21/hour=07/f.log.gz` |
 * | `firehose` | `2026/11/21/07/cf-logs-1-2026-11-21-07-15-42-0f8fad5b-d9cb-469f-a165-70867728950e.gz` |
 *
 * The file name is read first (its hour is the object's own), then the partitions. The
 * day is the hour CloudFront wrote the object for (Firehose: when it received the
 * oldest record, UTC unless the stream was set to another time zone), not a promise
 * about its lines: an object named `...2026-11-21-00...` may hold lines dated
 * 2026-11-20 (late requests), which Tally attributes to their own day.
 *
 * @example parseCloudFrontKey('cf/E2ABC.2026-11-21-07.a1b2c3.gz')
 *          // { layout: 'name', distribution: 'E2ABC', day: '2026-11-21', hour: 7, uniqueId: 'a1b2c3' }
 */
export function parseCloudFrontKey(key: string): CloudFrontKey | undefined {
  const slash = key.lastIndexOf('/');
  const name = key.slice(slash + 1);
  const folders = slash === -1 ? [] : key.slice(0, slash).split('/');
  const hive = hivePartitions(folders);
  const plain = hive === undefined ? plainPartitions(folders) : undefined;
  const partitions = hive ?? plain;
  const layoutOfPartitions: KeyLayout = hive !== undefined ? 'hive' : 'partitioned';

  const firehose = firehoseName(name);
  if (firehose !== undefined) {
    return describe('firehose', firehose.time, partitions?.distribution, firehose.uniqueId);
  }
  const standard = standardName(name);
  if (standard !== undefined) {
    const layout = partitions === undefined ? 'name' : layoutOfPartitions;
    return describe(layout, standard.time, partitions?.distribution ?? standard.distribution, standard.uniqueId);
  }
  if (name === '' || partitions?.time === undefined) return undefined;
  return describe(layoutOfPartitions, partitions.time, partitions.distribution, undefined);
}

function describe(layout: KeyLayout, time: KeyTime, distribution: string | undefined, uniqueId: string | undefined): CloudFrontKey {
  return {
    layout,
    day: time.day,
    ...(time.hour === undefined ? {} : { hour: time.hour }),
    ...(distribution === undefined ? {} : { distribution }),
    ...(uniqueId === undefined ? {} : { uniqueId }),
  };
}

/** A day and hour from their digits, or undefined when they name no real hour. */
function keyTime(day: string, hh: string | undefined): KeyTime | undefined {
  if (!isValidDay(day)) return undefined;
  if (hh === undefined) return { day };
  if (!/^\d{2}$/.test(hh) || Number(hh) > 23) return undefined;
  return { day, hour: Number(hh) };
}

function standardName(name: string): { time: KeyTime; distribution: string; uniqueId: string } | undefined {
  const match = STANDARD_NAME.exec(name);
  if (!match) return undefined;
  const [, named, day, hh, uniqueId] = match as unknown as [string, string, string, string, string];
  const time = keyTime(day, hh);
  const distribution = PREFIXED_DISTRIBUTION_ID.exec(named)?.[1] ?? named;
  return time === undefined ? undefined : { time, distribution, uniqueId };
}

function firehoseName(name: string): { time: KeyTime; uniqueId: string } | undefined {
  const match = FIREHOSE_NAME.exec(name);
  if (!match) return undefined;
  const [, day, hh, uniqueId] = match as unknown as [string, string, string, string];
  const time = keyTime(day, hh);
  return time === undefined ? undefined : { time, uniqueId };
}

interface Partitions {
  readonly time?: KeyTime;
  readonly distribution?: string;
}

/** `DistributionId=`, `year=`, `month=`, `day=`, `hour=` folders (names in any case), or undefined when there are none. */
function hivePartitions(folders: readonly string[]): Partitions | undefined {
  const values = new Map<string, string>();
  for (const folder of folders) {
    const match = HIVE_SEGMENT.exec(folder);
    if (match) values.set(match[1]!.toLowerCase(), match[2]!);
  }
  const distribution = values.get('distributionid');
  const [year, month, day] = [values.get('year'), values.get('month'), values.get('day')];
  const time = year !== undefined && month !== undefined && day !== undefined ? keyTime(`${year}-${month.padStart(2, '0')}-${day.padStart(2, '0')}`, values.get('hour')?.padStart(2, '0')) : undefined;
  if (time === undefined && distribution === undefined) return undefined;
  return { ...(time === undefined ? {} : { time }), ...(distribution === undefined || distribution === '' ? {} : { distribution }) };
}

/**
 * The last `yyyy/MM/dd[/HH]` run of folders, and a distribution id in the folder just
 * before or after it (`{DistributionId}/{yyyy}/...` or `{yyyy}/.../{HH}/{DistributionId}/`).
 */
function plainPartitions(folders: readonly string[]): Partitions | undefined {
  for (let at = folders.length - 3; at >= 0; at--) {
    const [year, month, day] = folders.slice(at, at + 3) as [string, string, string];
    if (!/^\d{4}$/.test(year) || !/^\d{2}$/.test(month) || !/^\d{2}$/.test(day)) continue;
    const hh = folders[at + 3];
    const withHour = hh !== undefined && /^\d{2}$/.test(hh) ? keyTime(`${year}-${month}-${day}`, hh) : undefined;
    const time = withHour ?? keyTime(`${year}-${month}-${day}`, undefined);
    if (time === undefined) continue;
    const after = folders[at + (withHour === undefined ? 3 : 4)];
    const distribution = [folders[at - 1], after].find((folder) => folder !== undefined && DISTRIBUTION_ID.test(folder));
    return { time, ...(distribution === undefined ? {} : { distribution }) };
  }
  return undefined;
}
