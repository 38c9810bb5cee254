import { gzipSync } from 'node:zlib';
import { parquetWriteBuffer } from 'hyparquet-writer';

/** The formats chaos writes its objects in (the logs are generated as legacy text first). */
export type ChaosFormat = 'legacy' | 'json' | 'parquet';

/**
 * A generated legacy log (one `#Fields` header, tab-separated lines) rewritten in another
 * CloudFront format with the same fate for every line: a well-formed line becomes a
 * JSON object or a Parquet row with the same fields; a line with too few fields becomes
 * what that format calls malformed (a JSON array; a Parquet row with no date), and a bad
 * value stays the same bad value. The recount of the legacy text holds for all.
 */
export function rewriteLog(text: string, format: ChaosFormat): Buffer {
  if (format === 'legacy') return gzipSync(text);
  const lines = text.split('\n').filter((line) => line !== '');
  const fields = lines.find((line) => line.startsWith('#Fields:'))!.slice('#Fields:'.length).trim().split(/\s+/);
  const rows = lines.filter((line) => !line.startsWith('#')).map((line) => line.split('\t'));
  if (format === 'json') {
    const json = rows.map((row) => (row.length < fields.length ? JSON.stringify(row) : JSON.stringify(Object.fromEntries(fields.map((name, i) => [name, row[i]!]))))).join('\n');
    return gzipSync(`${json}\n`);
  }
  // Parquet spells fields with underscores (cs(Host) -> cs_Host), as CloudFront v2 does.
  const columnName = (name: string) => name.replace(/\(([^)]*)\)/, '_$1').replace(/-/g, '_');
  return Buffer.from(
    parquetWriteBuffer({
      columnData: fields.map((name, i) => ({
        name: columnName(name),
        data: rows.map((row) => (row.length < fields.length ? (name === 'date' ? null : (row[i] ?? null)) : row[i]!)),
        type: 'STRING' as const,
        nullable: true,
      })),
      rowGroupSize: 16,
    }),
  );
}
