/**
 * Consecutive values of one Parquet column, as the reader hands them to the counter:
 * src/adapters/logs/parquet-columns.ts fills them; `RecordSink` (log-records.ts) and
 * `ColumnCounting` (column-counting.ts) read them. A module of its own, importing
 * nothing, so that both can use it without an import circle.
 */

/** Consecutive values of one column as text (see `RecordSink.columnRows` in log-records.ts). */
export interface ColumnRun {
  bytes: Uint8Array;
  starts: Int32Array;
  ends: Int32Array;
  /** The index in {@link starts} and {@link ends} of the first row not yet handed over. */
  at: number;
  /** The most bytes any one value of the run has. */
  longest: number;
  /**
   * When the run's values come from a dictionary: each row's entry (-1: none), and the
   * entries' text. {@link starts} and {@link ends} may then be empty until
   * {@link spansOf} fills them: a row's text is its entry's.
   */
  entries: Int32Array | undefined;
  dictionary: { readonly bytes: Uint8Array; readonly starts: Int32Array; readonly ends: Int32Array } | undefined;
  dictionarySize: number;
  /**
   * When the values are numbers (a typed column: integers, dates and times): each row's
   * value (NaN: none) in place of {@link bytes}, {@link starts} and {@link ends}, and the
   * text a value is written as. `instant` values are epoch milliseconds.
   */
  numbers: Float64Array | undefined;
  numberKind: 'integer' | 'instant' | undefined;
  numberText: ((value: number) => string) | undefined;
  /**
   * When the reader found them with the values (the sc-bytes column's PLAIN text pages):
   * each row's value read as a byte count, as `parseByteCountBytes` reads it (none, empty
   * or `-` 0; no byte count -1), in place of reading the text again.
   */
  byteCounts: Float64Array | undefined;
}

/** Makes sure `run.starts` and `run.ends` say where each row's text is (a dictionary run's are filled from its entries). */
export function spansOf(run: ColumnRun): void {
  const entries = run.entries;
  if (entries === undefined || run.starts.length >= entries.length) return;
  const dictionary = run.dictionary!;
  const starts = new Int32Array(entries.length);
  const ends = new Int32Array(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    if (entry < 0) continue;
    starts[i] = dictionary.starts[entry]!;
    ends[i] = dictionary.ends[entry]!;
  }
  run.starts = starts;
  run.ends = ends;
}
