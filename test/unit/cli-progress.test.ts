import { progressDisplay } from '../../src/cli/progress';
import { captureIo } from '../support/cli';

const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('the progress line without a terminal', () => {
  it('ends on the final count: the last line says 17/17 when the result says 17 were read', async () => {
    const io = captureIo();
    const progress = progressDisplay(io, 'reconcile', 'objects', { live: true, terminal: false, showAfterMs: 0 });
    progress.setTotal(17);
    progress.advance(6, { 'not counted': 0 });
    await until(() => io.stderr !== '');

    progress.advance(11, { 'not counted': 2 });
    progress.stop();

    const lines = io.stderr.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^reconcile: 6\/17 objects, /);
    expect(lines[lines.length - 1]).toMatch(/^reconcile: 17\/17 objects, [\d.]+\/s, not counted 2$/);
  });

  it('prints the final count once when the last line already said it (replay with stdout and stderr piped)', async () => {
    const io = captureIo();
    const progress = progressDisplay(io, 'replay', 'messages', { live: true, terminal: false, showAfterMs: 0 });
    progress.setTotal(4);
    progress.advance(4, { failed: 0 });
    await until(() => io.stderr !== '');

    progress.stop();

    const lines = io.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^replay: 4\/4 messages, [\d.]+\/s, failed 0$/);
  });

  it('draws nothing for work that ends before it is due', () => {
    const io = captureIo();
    const progress = progressDisplay(io, 'reconcile', 'objects', { live: true, terminal: false, showAfterMs: 60_000 });
    progress.setTotal(3);
    progress.advance(3);
    progress.stop();

    expect(io.stderr).toBe('');
  });
});
