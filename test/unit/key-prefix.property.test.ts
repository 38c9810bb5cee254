import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { readCloserConfig } from '../../src/adapters/wiring/handoff-config';
import { ConfigError } from '../../src/domain/errors';
import { keyPrefixProblem, MAX_S3_KEY_BYTES } from '../../src/domain/logs/log-naming';
import { captureIo, tallyCommand } from '../support/cli';

/**
 * A log key prefix (`--prefix`, `TALLY_LOG_PREFIX`, `TALLY_EXPORT_PREFIX`) reaches S3 as
 * ListObjectsV2's Prefix and in front of every key put and close write. It was taken as
 * typed: a prefix of 2,000 bytes, a newline, a lone surrogate (sent as U+FFFD: another
 * prefix than the one typed) or `../` went to S3.
 */
describe('a log key prefix', () => {
  const segment = fc.stringMatching(/^[A-Za-z0-9!_.*'()=-]{1,20}$/).filter((text) => text !== '.' && text !== '..');

  it('is taken when it is what S3 keys are made of: segments of safe characters, with or without a trailing slash', () => {
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 8 }), fc.boolean(), (segments, slash) => {
        const prefix = `${segments.join('/')}${slash && segments.length > 0 ? '/' : ''}`;
        expect(keyPrefixProblem(prefix)).toBeUndefined();
      }),
    );
  });

  it('is refused, for any text, exactly when it is too long, holds a control character or a lone surrogate, or has a . or .. segment', () => {
    const anyText = fc.oneof(fc.string({ unit: 'binary', maxLength: 60 }), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ maxLength: 1_200 }), fc.constant('é'.repeat(513)));
    fc.assert(
      fc.property(anyText, (prefix) => {
        const bad =
          Buffer.byteLength(prefix) > MAX_S3_KEY_BYTES ||
          /[\u0000-\u001f\u007f-\u009f]/.test(prefix) ||
          /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(prefix) ||
          prefix.split('/').some((part) => part === '.' || part === '..');
        expect(keyPrefixProblem(prefix) !== undefined).toBe(bad);
      }),
      { numRuns: 500 },
    );
  });

  it.each([
    ['backfill', ['--from', '2026-11-20', '--to', '2026-11-21']],
    ['reconcile', ['--from', '2026-11-20', '--to', '2026-11-21']],
    ['put', ['no-such-file.log']],
  ])('tally %s --prefix with a bad value exits 2 naming --prefix, before any target is opened', async (command, argv) => {
    const nowhere = mkdtempSync(join(tmpdir(), 'tally-prefix-'));
    try {
      for (const [prefix, why] of [
        ['logs/../other/', 'it has a ".." segment'],
        ['./logs/', 'it has a "." segment'],
        ['logs\n/', 'it holds a control character'],
        ['logs\ud800/', 'it holds half of a surrogate pair'],
        [`${'p'.repeat(1_025)}/`, 'it is 1026 bytes of UTF-8, and an S3 key is at most 1024'],
      ] as const) {
        const io = captureIo();

        const code = await tallyCommand(command)([...argv, '--prefix', prefix], io, { TALLY_TABLE: 'prod-usage', TALLY_LOG_BUCKET: 'prod-logs' }, nowhere);

        expect([prefix, code]).toEqual([prefix, 2]);
        expect(io.stderr).toMatch(new RegExp(`^tally ${command}: --prefix must be an S3 key prefix such as cloudfront/ \\(or "" for the bucket's root\\): ${why.replace(/[.()]/g, '\\$&')}.*; got ".*"\\n$`));
        expect(io.stdout).toBe('');
      }
    } finally {
      rmSync(nowhere, { recursive: true, force: true });
    }
  });

  it('TALLY_LOG_PREFIX is held to the same, naming the variable; --prefix "" (the bucket root) is still taken', async () => {
    const nowhere = mkdtempSync(join(tmpdir(), 'tally-prefix-'));
    try {
      const io = captureIo();
      const code = await tallyCommand('backfill')(['--from', '2026-11-20', '--to', '2026-11-21'], io, { TALLY_TABLE: 'prod-usage', TALLY_LOG_BUCKET: 'prod-logs', TALLY_LOG_PREFIX: 'a/../b/' }, nowhere);
      expect(code).toBe(2);
      expect(io.stderr).toMatch(/^tally backfill: TALLY_LOG_PREFIX must be an S3 key prefix .*"\.\." segment/);
      expect(keyPrefixProblem('')).toBeUndefined();
    } finally {
      rmSync(nowhere, { recursive: true, force: true });
    }
  });

  it('TALLY_EXPORT_PREFIX is held to the same at cold start', () => {
    const env = { TALLY_TABLE: 'usage', TALLY_EXPORT_BUCKET: 'tally-exports' };
    expect(() => readCloserConfig({ ...env, TALLY_EXPORT_PREFIX: 'exports/../logs/' })).toThrow(ConfigError);
    expect(() => readCloserConfig({ ...env, TALLY_EXPORT_PREFIX: 'exports\u0007/' })).toThrow(/TALLY_EXPORT_PREFIX must be an S3 key prefix .*control character/);
    expect(readCloserConfig({ ...env, TALLY_EXPORT_PREFIX: 'exports/v2/' }).exportPrefix).toBe('exports/v2/');
  });
});
