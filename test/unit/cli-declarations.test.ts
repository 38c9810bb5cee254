import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { version } from '../../package.json';
import { commandPath, type CliContext } from '../../src/cli/command';
import { COMMANDS } from '../../src/cli/commands';
import { describeProgram, optionsOf } from '../../src/cli/program';
import { captureIo, runTallyBin, tallyCommand } from '../support/cli';

const context: CliContext = { io: captureIo(), env: {}, cwd: '/nonexistent', now: () => new Date('2026-11-23T12:00:00Z') };
const program = describeProgram(COMMANDS, context);

/** Every long flag a command accepts (`dlq list` for a subcommand), read from the parser the CLI really uses. */
function acceptedFlags(path: string): string[] {
  let command = program;
  for (const word of path.split(' ')) {
    const found = command.commands.find((candidate) => candidate.name() === word);
    if (found === undefined) throw new Error(`no command ${path}`);
    command = found;
  }
  return command.options.map((option) => option.long!).filter((flag) => flag !== undefined);
}

const names = COMMANDS.map(commandPath);

describe('every tally command, from its declaration', () => {
  it('has the commands README documents', () => {
    expect(names).toEqual(['count', 'token', 'put', 'replay', 'dlq list', 'dlq drop', 'dlq dropped', 'backfill', 'reconcile', 'adjust', 'adjustments', 'adjustments revert', 'explain', 'status', 'plan', 'close', 'quota set', 'quota list', 'quota remove', 'quota check', 'zone set', 'zone show', 'zone clear', 'stripe link', 'stripe unlink', 'stripe links', 'stripe check', 'stripe push', 'stripe status', 'stripe reconcile']);
  });

  it('README lists every command', () => {
    const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');

    for (const name of names) expect(readme).toMatch(new RegExp(`^\\|[^\\n]*\`tally ${name}\\b`, 'm'));
  });

  it.each(names)('%s: --help (the built binary) lists every option it accepts, and exits 0', async (name) => {
    const accepted = acceptedFlags(name);

    const { code, stdout } = await runTallyBin([...name.split(' '), '--help']);

    expect(code).toBe(0);
    expect(accepted.length).toBeGreaterThan(1);
    for (const flag of accepted) expect(stdout).toMatch(new RegExp(`^\\s+(-\\w, )?${flag}\\b`, 'm'));
  });

  it.each(names)('%s: an unknown flag exits 2 and says which', async (name) => {
    const { code, stdout, stderr } = await runTallyBin([...name.split(' '), '--no-such-flag']);

    expect(code).toBe(2);
    expect(stderr).toMatch(new RegExp(`^tally ${name}: unknown option '--no-such-flag'`));
    expect(stdout).toBe('');
  });

  it.each(COMMANDS.map((command) => [commandPath(command), command] as const))('%s: declares help text for every option', (_, command) => {
    for (const option of optionsOf(command)) expect(option.help.trim().length).toBeGreaterThan(5);
    expect(command.summary.length).toBeGreaterThan(10);
  });

  it('shows the version', async () => {
    const { code, stdout } = await runTallyBin(['--version']);

    expect(code).toBe(0);
    expect(stdout.trim()).toBe(version);
  });

  it('prints the usage and exits 2 with no command, and 2 for an unknown command', async () => {
    const none = await runTallyBin([]);
    const unknown = await runTallyBin(['recount']);

    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/Usage: tally/);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command 'recount'/);
  });
});

describe('shared checks of option values', () => {
  const run = (name: string) => tallyCommand(name);

  it.each([
    ['backfill', ['--from', '2026-11-31', '--to', '2026-12-01'], 'tally backfill: --from "2026-11-31" is not a calendar day (YYYY-MM-DD)\n'],
    ['reconcile', ['--from', '2026-11-21', '--to', '2026-11-20'], 'tally reconcile: --to 2026-11-20 is before --from 2026-11-21\n'],
    ['adjustments', ['--account', 'acme', '--from', '2026-11-21', '--to', '2026-11-20'], 'tally adjustments: --to 2026-11-20 is before --from 2026-11-21\n'],
    ['backfill', ['--from', '2026-11-21', '--to', '2026-11-21', '--concurrency', '65'], 'tally backfill: --concurrency must be a whole number from 1 to 64, got "65"\n'],
    ['reconcile', ['--from', '2026-11-21', '--to', '2026-11-21', '--concurrency', '0'], 'tally reconcile: --concurrency must be a whole number from 1 to 64, got "0"\n'],
    ['replay', ['--max', '0'], 'tally replay: --max must be a whole number of at least 1, got "0"\n'],
    ['backfill', ['--from', '2026-11-21', '--to', '2026-11-21', '--rate', '-1'], 'tally backfill: --rate must be a number from 0.001 to 1,000,000, got "-1"\n'],
    ['close', ['--day', '9999-12-31'], 'tally close: --day "9999-12-31" is outside the days Tally supports, 2000-01-01..2099-12-31\n'],
    ['explain', ['--account', 'acme', '--day', '1999-12-31'], 'tally explain: --day "1999-12-31" is outside the days Tally supports, 2000-01-01..2099-12-31\n'],
    ['reconcile', ['--from', '2026-11-21', '--to', '9999-12-31'], 'tally reconcile: --to "9999-12-31" is outside the days Tally supports, 2000-01-01..2099-12-31\n'],
    ['reconcile', ['--from', '2000-01-01', '--to', '2099-12-31'], 'tally reconcile: --from 2000-01-01 --to 2099-12-31 spans 36,525 days; reconcile at most 366 days a run (e.g. --to 2000-12-31), then the next range\n'],
    ['reconcile', ['--from', '2023-11-21', '--to', '2024-11-21'], 'tally reconcile: --from 2023-11-21 --to 2024-11-21 spans 367 days; reconcile at most 366 days a run (e.g. --to 2024-11-20), then the next range\n'],
    ['backfill', ['--from', '0000-01-01', '--to', '2026-11-21'], 'tally backfill: --from "0000-01-01" is outside the days Tally supports, 2000-01-01..2099-12-31\n'],
    ['quota', ['check', '--month', '9999-12'], 'tally quota check: --month "9999-12" is outside the months Tally supports, 2000-01..2099-12\n'],
    [
      'adjust',
      ['--account', 'acme', '--day', '9999-12-31', '--metric', 'requests', '--delta', '1', '--reason', 'x', '--id', 'NC-FUT-1', '--force'],
      'tally adjust: --day "9999-12-31" is outside the days Tally supports, 2000-01-01..2099-12-31\n',
    ],
  ])('%s %j exits 2: %s', async (name, argv, message) => {
    const io = captureIo();

    const code = await run(name)(argv, io, {}, '/nonexistent');

    expect(code).toBe(2);
    expect(io.stderr).toBe(message);
  });

  it.each([
    [['drop', '--reason', 'x'], 'tally dlq drop: name the messages: --id ID (repeatable) or --poison, not both\n'],
    [['drop', '--poison', '--id', 'm-1', '--reason', 'x'], 'tally dlq drop: name the messages: --id ID (repeatable) or --poison, not both\n'],
    [['drop', '--poison', '--reason', '  '], 'tally dlq drop: --reason must say something: it is kept in the record\n'],
    [['drop', '--poison', '--force', '--reason', 'x'], 'tally dlq drop: --force goes with --id: --poison drops poison messages only\n'],
    [['drop', '--poison'], 'tally dlq drop: --reason <text> is required\n'],
  ])('dlq %j exits 2 before touching any target: %s', async (argv, message) => {
    const io = captureIo();

    const code = await run('dlq')(argv, io, {}, '/nonexistent');

    expect(code).toBe(2);
    expect(io.stderr).toBe(message);
  });

  it('tally dlq alone lists its subcommands and exits 2', async () => {
    const { code, stderr } = await runTallyBin(['dlq']);

    expect(code).toBe(2);
    expect(stderr).toMatch(/Usage: tally dlq/);
    for (const sub of ['list', 'drop', 'dropped']) expect(stderr).toMatch(new RegExp(`^\\s+${sub} \\[options\\]`, 'm'));
  });

  it('exits 2 naming a missing required flag, before touching any target', async () => {
    const io = captureIo();

    const code = await run('reconcile')(['--from', '2026-11-21'], io, {}, '/nonexistent');

    expect(code).toBe(2);
    expect(io.stderr).toBe('tally reconcile: --to <day> is required\n');
  });
});

describe('messages people read', () => {
  it('prints an error as its message alone: no TypeError: or ConfigError: prefix', async () => {
    const missing = await runTallyBin(['count', 'fixtures/logs/nope.gz']);
    const badResolver = await runTallyBin(['count', '--resolver', 'bogus:x', 'fixtures/logs/plain-v33.log']);
    const noTarget = await runTallyBin(['reconcile', '--from', '2026-11-21', '--to', '2026-11-21'], { cwd: '/', env: { PATH: process.env.PATH } });

    expect([missing.code, badResolver.code, noTarget.code]).toEqual([2, 2, 2]);
    for (const { stderr } of [missing, badResolver, noTarget]) {
      expect(stderr).toMatch(/^tally (count|reconcile): /);
      expect(stderr).not.toMatch(/\w+Error:/);
    }
    expect(missing.stderr).toBe('tally count: file fixtures/logs/nope.gz: no such file\n');
    expect(noTarget.stderr).toMatch(/^tally reconcile: no target: name one with --table/);
  });

  it('count speaks of files, and of "1 data line"', async () => {
    const { code, stderr } = await runTallyBin(['count', 'fixtures/logs/no-fields-header.log.gz']);

    expect(code).toBe(1);
    expect(stderr).toBe(
      'tally count: file fixtures/logs/no-fields-header.log.gz: not a CloudFront log: 1 data line and no #Fields header with a date, timestamp(ms) or timestamp field (a log with no header needs its field list: TALLY_LOG_FIELDS, or tally count --fields)\n',
    );
  });

  it('plan says that 64 shards is the ceiling when it recommends 64', async () => {
    const io = captureIo();
    const small = captureIo();

    await tallyCommand('plan')(['--objects-per-account-day', '100000'], io);
    await tallyCommand('plan')(['--objects-per-account-day', '96'], small);

    expect(io.stdout).toMatch(/TALLY_SHARDS=64 \(recommended: 64 is the ceiling, TALLY_SHARDS allows no more\)/);
    expect(small.stdout).not.toMatch(/ceiling/);
  });

  it('adjust refuses a future day unless --force, before it looks for a target', async () => {
    const io = captureIo();
    const argv = ['--account', 'acme', '--day', '2026-11-24', '--metric', 'requests', '--delta', '-5', '--reason', 'x', '--id', 'A-1'];

    const code = await tallyCommand('adjust')(argv, io, {}, '/nonexistent', context.now);
    const forced = captureIo();
    const forcedCode = await tallyCommand('adjust')([...argv, '--force'], forced, {}, '/nonexistent', context.now);

    expect(code).toBe(2);
    expect(io.stderr).toBe('tally adjust: --day 2026-11-24 is in the future (today is 2026-11-23 UTC); pass --force to record it anyway\n');
    // With --force it goes on, and stops only for want of a target.
    expect(forcedCode).toBe(2);
    expect(forced.stderr).toMatch(/no target/);
  });
});
