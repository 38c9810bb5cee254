/**
 * The keys of the JSON lines being read, as their bytes, and for each key the field its
 * value is (1-based; 0 when the value is not read).
 */
export interface JsonTemplate {
  readonly keyBytes: Uint8Array;
  /** The end of each key in {@link keyBytes}. */
  readonly keyEnds: readonly number[];
  readonly slotOfKey: readonly number[];
  /** The fields read per line (the counter's fields). */
  readonly slots: number;
}

/** Where the JSON scanner reads lines into the counter, and hands over those it does not read. */
export interface JsonLineSink {
  /** A whole line `[start, end)` of `bytes` (its '\n' at `end`, a CR before it kept): read it in full (JsonLines). */
  line(bytes: Buffer, start: number, end: number): void;
  /** The template of the lines read last, if they can have one. */
  template(): JsonTemplate | undefined;
  /** Makes `template` the counter's (see LogCounter.useJsonTemplate); false when lines cannot be read with it. */
  useTemplate(template: JsonTemplate | undefined): boolean;
  /** The most bytes {@link load} takes. */
  readonly capacity: number;
  /** Whole lines for {@link count} (see LogCounter.loadJson). */
  load(bytes: Uint8Array, from: number, end: number): void;
  /** Counts the loaded lines from `offset` that fit the template; the offset of the first that does not, or the end. */
  count(offset: number): number;
}

/**
 * JSON lines at the speed of tab-separated ones. CloudFront writes every line of a v2
 * JSON log as the same flat object: the same keys in the same order, every value a
 * string. The scanner learns those keys from a line the general reader (JsonLines) took
 * apart ({@link JsonTemplate}); the counter's line scanner then reads each line by
 * checking, 16 bytes at a time (`scanJson` in line-scan.wat and a module written for the
 * template, json-reader-wasm.ts; WebAssembly SIMD), that the
 * bytes between its values are exactly the template's and that no value holds a quote,
 * a backslash or a control byte, and counts its values where they are, as it counts the
 * columns of a tab-separated line. Any line that does not fit (other keys, white space,
 * an escape, a line too long) goes to the general reader, in its place, so that lines
 * are counted in order and exactly as before (test/unit/json-scanner.property.test.ts
 * holds it to that).
 */
export class JsonScanner {
  private template: JsonTemplate | undefined;
  private on = false;

  constructor(private readonly sink: JsonLineSink) {}

  /** Reads the whole lines `[from, end)` of `bytes` (`end` just past a '\n'). */
  lines(bytes: Buffer, from: number, end: number): void {
    const sink = this.sink;
    // The line before may have been read by the general reader alone (one cut by a chunk).
    this.learn();
    let at = from;
    while (at < end) {
      if (!this.on) {
        const newline = bytes.indexOf(10, at);
        sink.line(bytes, at, newline);
        this.learn();
        at = newline + 1;
        continue;
      }
      let stop = Math.min(end, at + sink.capacity);
      if (stop < end) {
        // What is loaded ends with a line.
        stop = bytes.lastIndexOf(10, stop - 1) + 1;
        if (stop <= at) {
          // One line longer than the scanner's text: the general reader has it.
          const newline = bytes.indexOf(10, at);
          sink.line(bytes, at, newline);
          this.learn();
          at = newline + 1;
          continue;
        }
      }
      sink.load(bytes, at, stop);
      let offset = 0;
      const length = stop - at;
      while (offset < length) {
        offset = this.on ? sink.count(offset) : offset;
        if (offset >= length) break;
        const newline = bytes.indexOf(10, at + offset);
        sink.line(bytes, at + offset, newline);
        this.learn();
        offset = newline + 1 - at;
      }
      at = stop;
    }
  }

  /** Takes the reader's template (the counter checks it against its fields each time). */
  private learn(): void {
    this.template = this.sink.template();
    this.on = this.sink.useTemplate(this.template);
  }
}
