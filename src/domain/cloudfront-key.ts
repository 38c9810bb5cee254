import { isValidDay } from './days';

/** What a CloudFront standard-log object key says about the object. */
export interface CloudFrontKey {
  readonly distribution: string;
  /** UTC day of the hour the object was written for (its lines may hold neighbouring days). */
  readonly day: string;
  readonly hour: number;
  readonly uniqueId: string;
}

const NAME = /^(.+)\.(\d{4}-\d{2}-\d{2})-(\d{2})\.([^./]+)(?:\.gz)?$/;

/**
 * Reads `<prefix><distributionId>.YYYY-MM-DD-HH.<uniqueId>.gz`, the name CloudFront
 * gives every standard-log object; `undefined` for any other key.
 *
 * The day in the name is the hour CloudFront wrote the object for, not a promise
 * about its lines: an object named `...2026-11-21-00...` may hold lines dated
 * 2026-11-20 (late requests), which Tally attributes to their own day.
 *
 * @example parseCloudFrontKey('cf/E2ABC.2026-11-21-07.a1b2c3.gz')
 *          // { distribution: 'E2ABC', day: '2026-11-21', hour: 7, uniqueId: 'a1b2c3' }
 */
export function parseCloudFrontKey(key: string): CloudFrontKey | undefined {
  const name = key.slice(key.lastIndexOf('/') + 1);
  const match = NAME.exec(name);
  if (!match) return undefined;
  const [, distribution, day, hh, uniqueId] = match as unknown as [string, string, string, string, string];
  const hour = Number(hh);
  if (!isValidDay(day) || hour > 23) return undefined;
  return { distribution, day, hour, uniqueId };
}
