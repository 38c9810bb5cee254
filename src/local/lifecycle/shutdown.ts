import { describeError } from '../../domain/errors';

type Step = () => unknown;

/** How long the steps together may take before the process exits anyway (its watched children die with it). */
const DEADLINE_MS = 20_000;

/**
 * What `npm start` undoes when it ends, however it ends. Each thing that starts
 * registers how to stop it; the steps run once, in reverse order (the poller stops
 * before the database it writes to), each failure reported and the next step run.
 *
 * {@link Shutdown.exitOnSignalsAndCrashes} runs them on SIGINT, SIGTERM and SIGHUP (exit
 * 0: a stop was asked for) and on an uncaught exception or unhandled rejection (exit 1).
 * SIGKILL runs nothing: for that, Java runs under a watchdog (`child-watchdog.ts`), the
 * emulator lives in this process, and the next start takes over the lock and replaces
 * `.tally/local.json`.
 */
export class Shutdown {
  private readonly steps: Step[] = [];
  private running: Promise<void> | undefined;
  private signalled = false;

  constructor(private readonly report: (line: string) => void = (line) => console.error(line)) {}

  /** Registers how to undo something that just started. */
  add(step: Step): void {
    this.steps.push(step);
  }

  /**
   * True once a stop signal (Ctrl-C, SIGTERM, SIGHUP) arrived: a start that fails after it
   * failed because the things it was using were stopped, which is no error to report.
   */
  get stopAsked(): boolean {
    return this.signalled;
  }

  /** Runs the registered steps, newest first; a second call waits for the first. */
  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.splice(0).reverse()) {
        try {
          await step();
        } catch (error) {
          this.report(`tally: while stopping: ${describeError(error)}`);
        }
      }
    })();
    return this.running;
  }

  /** Runs the steps, then exits with `code` (at the latest after 20 s). */
  async exit(code: number): Promise<never> {
    setTimeout(() => process.exit(code), DEADLINE_MS).unref();
    await this.run();
    process.exit(code);
  }

  /** Stops everything and exits on a stop signal or a crash of this process. */
  exitOnSignalsAndCrashes(onSignal: () => void = () => undefined): void {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.on(signal, () => {
        // A second Ctrl-C while stopping: leave at once (the watchdog still stops Java).
        if (this.signalled) process.exit(1);
        this.signalled = true;
        onSignal();
        void this.exit(0);
      });
    }
    // A terminal that closed (SIGHUP) fails every later write: that must not turn a stop into a crash.
    for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
    const crash = (kind: string) => (error: unknown) => {
      if (this.running !== undefined) return; // already stopping: the exit comes, whatever else fails
      this.report(`tally: ${kind}: ${error instanceof Error ? (error.stack ?? describeError(error)) : String(error)}`);
      void this.exit(1);
    };
    process.on('uncaughtException', crash('crashed'));
    process.on('unhandledRejection', crash('crashed (unhandled rejection)'));
  }
}
