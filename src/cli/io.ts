/** Where a command writes; tests pass their own. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

/**
 * A reader that closed early (`tally dlq list | head`) leaves stdout broken: what is left to
 * print goes nowhere and the command still finishes its work, rather than dying of an
 * unhandled EPIPE half way through a replay or a backfill.
 */
let stdoutClosed = false;
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  stdoutClosed = true;
});

export const processIo: CliIo = {
  out: (text) => {
    if (!stdoutClosed) process.stdout.write(text);
  },
  err: (text) => process.stderr.write(text),
};

/** A plain aligned text table; numbers align right. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const numeric = header.map((_, column) => rows.length > 0 && rows.every((row) => /^-?[\d.]+$/.test(row[column] ?? '')));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (numeric[column] ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd();
  return `${[line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n')}\n`;
}
