import type { SingleBar } from 'cli-progress';
import type { ProgressReporter } from '../app/progress';
import { processIo, type CliIo } from './io';

/** Nothing is drawn for work that finishes sooner than this. */
const SHOW_AFTER_MS = 1000;
/** Without a terminal, a plain progress line this often. */
const PLAIN_EVERY_MS = 5000;

export interface ProgressDisplay extends ProgressReporter {
  /** Ends the display (the final summary is the command's own output). */
  stop(): void;
}

function describeCounts(counts: Readonly<Record<string, number>>): string {
  return Object.entries(counts)
    .map(([name, value]) => `${name} ${value}`)
    .join(', ');
}

/**
 * `cli-progress`, loaded when a bar is first drawn, not when this module is: the CLI's
 * command list imports this module for every command (`tally count` too), and loading
 * cli-progress was about a twentieth of a fresh `tally count` of a small file's CPU (issue 34).
 */
async function loadSingleBar(): Promise<typeof SingleBar> {
  return (await import('cli-progress')).SingleBar;
}

/**
 * Progress on stderr for work longer than a second: a cli-progress bar with counts
 * and rate when stderr is a terminal, a plain line every few seconds otherwise (CI,
 * logs). Nothing is drawn for a capturing `io` (tests) or for short work.
 */
export function progressDisplay(
  io: CliIo,
  label: string,
  unit: string,
  /** Tests: draw on a capturing `io`, as on a plain stderr (no terminal), sooner. */
  drawing: { live?: boolean; terminal?: boolean; showAfterMs?: number } = {},
): ProgressDisplay {
  const started = Date.now();
  let total = 0;
  let value = 0;
  let counts: Readonly<Record<string, number>> = {};
  const rate = () => (value / Math.max(0.001, (Date.now() - started) / 1000)).toFixed(1);
  if (!(drawing.live ?? io === processIo)) {
    return { setTotal: (n) => (total = n), advance: (n, c) => ((value += n), c && (counts = c)), stop() {} };
  }

  let bar: SingleBar | undefined;
  let plain: NodeJS.Timeout | undefined;
  const payload = () => ({ rate: rate(), counts: describeCounts(counts), unit });
  // What the last plain line said, the rate aside: the closing line is written only when it says more.
  let lastShown: string | undefined;
  const line = () => {
    const shown = `${value}/${total} ${unit}|${describeCounts(counts)}`;
    lastShown = shown;
    io.err(`${label}: ${value}/${total} ${unit}, ${rate()}/s${Object.keys(counts).length > 0 ? `, ${describeCounts(counts)}` : ''}\n`);
  };
  let stopped = false;
  const drawBar = async () => {
    const Bar = await loadSingleBar();
    // Stopped while cli-progress loaded: the command's own output follows, no bar.
    if (stopped) return;
    bar = new Bar({
      format: `${label} [{bar}] {value}/{total} {unit} | {rate}/s | {counts} | {duration_formatted}`,
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
      fps: 5,
    });
    bar.start(Math.max(total, value), value, payload());
  };
  const begin = setTimeout(() => {
    if (drawing.terminal ?? process.stderr.isTTY === true) {
      drawBar().catch((error: unknown) => io.err(`${label}: no progress bar (${error instanceof Error ? error.message : String(error)})\n`));
    } else {
      line();
      plain = setInterval(line, PLAIN_EVERY_MS);
      plain.unref();
    }
  }, drawing.showAfterMs ?? SHOW_AFTER_MS);
  begin.unref();

  return {
    setTotal(n) {
      total = n;
      bar?.setTotal(Math.max(total, value));
    },
    advance(n, c) {
      value += n;
      if (c !== undefined) counts = c;
      if (value > total) total = value;
      bar?.setTotal(total);
      bar?.update(value, payload());
    },
    stop() {
      stopped = true;
      clearTimeout(begin);
      if (plain !== undefined) {
        clearInterval(plain);
        // The last plain line was up to PLAIN_EVERY_MS old: end on the final count ("17/17", not "6/17"),
        // unless it already said it (work that ended just after its first line: one line, not two the same).
        if (lastShown !== `${value}/${total} ${unit}|${describeCounts(counts)}`) line();
      }
      if (bar !== undefined) {
        bar.update(value, payload());
        bar.stop();
      }
    },
  };
}
