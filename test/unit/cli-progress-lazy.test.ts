/**
 * `cli-progress` is loaded when a bar is first drawn, not when src/cli/progress.ts is
 * imported: the CLI's command list imports that module for every command, `tally count`
 * too, and loading cli-progress was about a twentieth of a fresh `tally count` of a small
 * file's CPU (issue 34).
 */
describe('the progress display loads cli-progress lazily', () => {
  afterEach(() => jest.dontMock('cli-progress'));

  const until = async (check: () => boolean) => {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  };

  /** A stand-in SingleBar that records what it was asked to draw. */
  function mockCliProgress() {
    const seen = { loads: 0, calls: [] as string[] };
    jest.doMock('cli-progress', () => {
      seen.loads++;
      return {
        SingleBar: class {
          start(total: number, value: number) {
            seen.calls.push(`start ${value}/${total}`);
          }
          setTotal(total: number) {
            seen.calls.push(`total ${total}`);
          }
          update(value: number) {
            seen.calls.push(`update ${value}`);
          }
          stop() {
            seen.calls.push('stop');
          }
        },
      };
    });
    return seen;
  }

  it('imports without loading it, then draws a bar with it when the work runs long', async () => {
    const seen = mockCliProgress();
    await jest.isolateModulesAsync(async () => {
      const { progressDisplay } = await import('../../src/cli/progress');
      const { captureIo } = await import('../support/cli');
      expect(seen.loads).toBe(0);

      const progress = progressDisplay(captureIo(), 'reconcile', 'objects', { live: true, terminal: true, showAfterMs: 0 });
      progress.setTotal(5);
      progress.advance(2);
      await until(() => seen.calls.length > 0);
      expect(seen.loads).toBe(1);
      progress.advance(3);
      progress.stop();
      expect(seen.calls[0]).toBe('start 2/5');
      expect(seen.calls.slice(-2)).toEqual(['update 5', 'stop']);
    });
  });
});
