import { parseResolverSpec } from '../../src/domain/logs/account-resolver';
import type { CountOptions } from '../../src/domain/logs/log-counter';
import { writeParquetLog } from '../support/parquet-logs';

/**
 * Which decompressors a Parquet file loads (parquet-log.ts): a Snappy file (CloudFront's,
 * DuckDB's) Tally's own Snappy decoder alone; hyparquet-compressors, whose loading builds Brotli's
 * dictionary and GZIP's tables, only for ZSTD, Brotli or LZ4 (issue 34).
 */
const options: CountOptions = { resolver: parseResolverSpec('host-label'), metricRules: [], objectKey: 'logs/E2PARQUETTEST.2026-11-21-00.abc.parquet' };

describe('Parquet decompressors', () => {
  afterEach(() => jest.dontMock('hyparquet-compressors'));

  it('reads a Snappy file without loading hyparquet-compressors, and a ZSTD file with it', async () => {
    let loads = 0;
    jest.doMock('hyparquet-compressors', () => {
      loads++;
      return jest.requireActual('hyparquet-compressors');
    });
    const snappy = await writeParquetLog({ accounts: ['acme'], rows: 500, shape: 'strings', codec: 'snappy' });
    const zstd = await writeParquetLog({ accounts: ['acme'], rows: 500, shape: 'strings', codec: 'zstd' });
    try {
      await jest.isolateModulesAsync(async () => {
        const { openLogFile } = await import('../../src/adapters/logs/log-opening');
        const { countLogContent } = await import('../../src/domain/logs/log-formats');

        const fromSnappy = await countLogContent(await openLogFile(snappy.path), options, snappy.path);
        expect(fromSnappy.lines.read).toBe(500);
        expect(loads).toBe(0);

        const fromZstd = await countLogContent(await openLogFile(zstd.path), options, zstd.path);
        expect(fromZstd.lines.read).toBe(500);
        expect(loads).toBe(1);
        expect(fromZstd.tally.usage()).toEqual(fromSnappy.tally.usage());
      });
    } finally {
      snappy.cleanup();
      zstd.cleanup();
    }
  });
});
