/** UTC calendar days as `YYYY-MM-DD` strings, the unit every counter is kept in. */

const DAY_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;
const MS_PER_DAY = 86_400_000;

/** True when `value` is a real calendar day such as `2024-02-29` (not `2023-02-29`). */
export function isValidDay(value: string): boolean {
  const match = DAY_PATTERN.exec(value);
  if (!match) return false;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  if (month < 1 || month > 12 || day < 1) return false;
  return day <= daysInMonth(year, month);
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** The UTC day of a timestamp. */
export function dayOf(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** `day` moved by `delta` days (negative goes back). */
export function addDays(day: string, delta: number): string {
  return dayOf(new Date(Date.parse(`${day}T00:00:00Z`) + delta * MS_PER_DAY));
}

/** Whole days from `from` to `to`, counting both ends (`to < from` gives 0 or less). */
export function daysBetweenInclusive(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / MS_PER_DAY) + 1;
}

/** Every day from `from` to `to`, both included, in order. */
export function eachDay(from: string, to: string): string[] {
  const days: string[] = [];
  for (let day = from; day <= to; day = addDays(day, 1)) days.push(day);
  return days;
}
