import { ValidationError } from '../errors';

/**
 * The largest whole number every reader of Tally's answers holds exactly: a JSON number
 * is read as an IEEE double by JavaScript (the dashboard), by `jq` and by most JSON
 * libraries, and a double stops counting in ones at 2^53
 * (https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Global_Objects/Number/MAX_SAFE_INTEGER).
 */
export const LARGEST_EXACT_FIGURE = Number.MAX_SAFE_INTEGER;

/**
 * A figure of an answer (a range's total, a month, a ranking's sum over every account)
 * passed {@link LARGEST_EXACT_FIGURE}: past it a sum is rounded (adding 1 to 2^53 gives
 * 2^53) and a reader would bill a figure that is not the count. Refused as a bad request
 * (400, CLI exit 2) naming the figure, never sent rounded. Each day's own figures are
 * exact, so a shorter range answers.
 */
export class InexactFigureError extends ValidationError {
  constructor(
    /** Where in the answer, e.g. `totals.bytes`. */
    readonly figure: string,
    message: string,
  ) {
    super(message);
    this.name = 'InexactFigureError';
  }
}

/**
 * The path of the first number in `answer` (depth first, in key order) that is past
 * {@link LARGEST_EXACT_FIGURE} or not finite, or undefined when every number is exact.
 * A sum past 2^53 is always seen here, even though its value is already rounded: the
 * rounded sum of figures whose exact sum is past 2^53 is itself at least 2^53.
 *
 * @example firstInexactFigure({ totals: { requests: 3, bytes: 2 ** 53 } }) // 'totals.bytes'
 */
export function firstInexactFigure(answer: unknown, path = ''): string | undefined {
  if (typeof answer === 'number') return Number.isFinite(answer) && Math.abs(answer) <= LARGEST_EXACT_FIGURE ? undefined : path;
  if (typeof answer !== 'object' || answer === null) return undefined;
  const entries: [string, unknown][] = Array.isArray(answer) ? answer.map((item, i) => [String(i), item]) : Object.entries(answer);
  for (const [key, value] of entries) {
    const found = firstInexactFigure(value, Array.isArray(answer) ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Refuses an answer holding a figure that could not be given exactly ({@link InexactFigureError});
 * returns it unchanged otherwise. `what` says what was asked (`usage of acme over 2026-01-01..2026-12-31`).
 *
 * @example refuseInexactFigures(report, `usage of ${report.accountId} over ${report.from}..${report.to}`)
 */
export function refuseInexactFigures<T>(answer: T, what: string, advice: string | ((figure: string) => string) = rangeAdvice): T {
  const figure = firstInexactFigure(answer);
  if (figure === undefined) return answer;
  const shorter = typeof advice === 'string' ? advice : advice(figure);
  throw new InexactFigureError(
    figure,
    `${what}: ${figure} adds up past ${LARGEST_EXACT_FIGURE.toLocaleString('en-US')} (2^53 - 1), where numbers in JSON and CSV readers stop being exact; nothing is answered rounded: ${shorter}`,
  );
}

/**
 * What to do about a report's figure past exact: a sum over days answers a month at a
 * time; a figure of one day or hour (`days[3].metrics.bytes`) is that day's own counter,
 * which no shorter range helps with.
 */
export function rangeAdvice(figure: string): string {
  return /^(days|hours)\[/.test(figure)
    ? "that is one day's own counter, a corrupt or hostile value: look at the account-day's items in the table"
    : "ask for a shorter range (a month at a time: each day's figures are exact)";
}
