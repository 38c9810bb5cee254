import {
  axisValue,
  exactNumber,
  exactTitle,
  humanBytes,
  longDay,
  metricLabel,
  monthName,
  readableValue,
  relativeTime,
  shortDay,
  signedValue,
  utcTime,
  weekday,
} from '../../src/dashboard/lib/format';

describe('dashboard formatting', () => {
  it('writes byte counts in decimal units with at most one decimal', () => {
    expect(humanBytes(0)).toBe('0 B');
    expect(humanBytes(999)).toBe('999 B');
    expect(humanBytes(1_000)).toBe('1 KB');
    expect(humanBytes(1_734_221)).toBe('1.7 MB');
    expect(humanBytes(2_300_000_000)).toBe('2.3 GB');
    expect(humanBytes(123_456_789)).toBe('123 MB');
    expect(humanBytes(5_000_000_000_000_000_000)).toBe('5000 PB');
  });

  it('carries a value that rounds up to 1000 into the next unit', () => {
    expect(humanBytes(999_960)).toBe('1 MB');
    expect(humanBytes(999_499)).toBe('999 KB');
  });

  it('keeps the sign of negative byte counts (adjustments)', () => {
    expect(humanBytes(-150_000)).toBe('-150 KB');
    expect(signedValue(-150_000, 'bytes')).toBe('-150 KB');
    expect(signedValue(2_500, 'bytes')).toBe('+2.5 KB');
    expect(signedValue(-12, 'requests')).toBe('-12');
    expect(signedValue(0, 'requests')).toBe('0');
  });

  it('shows bytes readable and counts with every digit, the exact value as the title', () => {
    expect(readableValue(1_734_221, 'bytes')).toBe('1.7 MB');
    expect(readableValue(1_734_221, 'requests')).toBe('1,734,221');
    expect(exactTitle(1_734_221, 'bytes')).toBe('1,734,221 bytes');
    expect(exactTitle(1_734_221, 'authorization_requests')).toBe('1,734,221 authorization requests');
    expect(exactNumber(-1234)).toBe('-1,234');
  });

  it('labels axes compactly', () => {
    expect(axisValue(12_000, 'requests')).toBe('12K');
    expect(axisValue(1_250_000, 'requests')).toBe('1.3M');
    expect(axisValue(-200_000, 'bytes')).toBe('-200 KB');
  });

  it('names metrics for headings', () => {
    expect(metricLabel('requests')).toBe('Requests');
    expect(metricLabel('bytes')).toBe('Bytes');
    expect(metricLabel('authorization_requests')).toBe('Authorization requests');
  });

  it('marks estimates from sampled real-time logs as estimates, bytes still in units', () => {
    expect(metricLabel('estimated_requests')).toBe('Requests (estimated from sampled logs)');
    expect(metricLabel('estimated_authorization_requests')).toBe('Authorization requests (estimated from sampled logs)');
    expect(readableValue(2_300_000_000, 'estimated_bytes')).toBe(readableValue(2_300_000_000, 'bytes'));
    expect(exactTitle(1_734_221, 'estimated_bytes')).toBe('1,734,221 bytes');
  });

  it('writes UTC days the same in every time zone', () => {
    expect(longDay('2026-01-08')).toBe('Thu, Jan 8, 2026');
    expect(shortDay('2026-01-08')).toBe('Jan 8');
    expect(weekday('2024-02-29')).toBe('Thu');
    expect(monthName('2026-12')).toBe('December 2026');
    expect(utcTime('2026-01-08T14:05:59Z')).toBe('Jan 8, 14:05 UTC');
  });

  it('says how long ago an update was', () => {
    const now = Date.parse('2026-01-08T12:00:00Z');
    expect(relativeTime('2026-01-08T11:59:30Z', now)).toBe('just now');
    expect(relativeTime('2026-01-08T11:55:00Z', now)).toBe('5 min ago');
    expect(relativeTime('2026-01-08T09:00:00Z', now)).toBe('3 h ago');
    expect(relativeTime('2026-01-04T12:00:00Z', now)).toBe('4 days ago');
  });
});
