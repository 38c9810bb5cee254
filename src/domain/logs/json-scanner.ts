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

/** Bytes the record breaker looks at, by their code. */
const NEWLINE = 10;
const QUOTE = 34;
const BACKSLASH = 92;

/**
 * Puts a line break between JSON records written back to back (`{...}{...}`), so that
 * each is a line of its own and the readers count it as they count JSON lines: what
 * follows a top-level object or array closed on the same line (past spaces, tabs and
 * CRs) starts a new line. Braces and brackets inside strings, and escaped quotes, are
 * not structure. Amazon Data Firehose writes records so unless the stream is told to add
 * a delimiter: "By default, Firehose concatenates data without any delimiters"
 * (https://docs.aws.amazon.com/firehose/latest/dev/basic-deliver.html; the delimiter is
 * the `AppendDelimiterToRecord` processor,
 * https://docs.aws.amazon.com/firehose/latest/APIReference/API_Processor.html).
 * A line break in the text always ends a record (JSON strings cannot hold
 * one), so a damaged record harms no more than its own line. Its state carries from one
 * chunk to the next.
 */
export class RecordBreaks {
  /** Open objects and arrays at this point of the record. */
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** A top-level value has just closed on this line. */
  private closed = false;

  /** `chunk` with a '\n' before each record that followed another on its line (the chunk itself when there is none). */
  split(chunk: Uint8Array): Uint8Array {
    const breaks = this.breaksIn(chunk);
    if (breaks.length === 0) return chunk;
    const out = new Uint8Array(chunk.length + breaks.length);
    let from = 0;
    breaks.forEach((at, i) => {
      out.set(chunk.subarray(from, at), from + i);
      out[at + i] = NEWLINE;
      from = at;
    });
    out.set(chunk.subarray(from), from + breaks.length);
    return out;
  }

  /** Where in `chunk` a record starts after another on its line (the offsets a '\n' goes before). */
  breaksIn(chunk: Uint8Array): number[] {
    const breaks: number[] = [];
    let { depth, inString, escaped, closed } = this;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      if (byte === NEWLINE) {
        depth = 0;
        inString = escaped = closed = false;
      } else if (inString) {
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) escaped = true;
        else if (byte === QUOTE) inString = false;
      } else if (closed && (byte === 32 || byte === 9 || byte === 13)) {
        // White space after a record: the next one has not started yet.
      } else {
        if (closed) {
          breaks.push(i);
          closed = false;
        }
        if (byte === QUOTE) inString = true;
        else if (byte === 0x7b /* { */ || byte === 0x5b /* [ */) depth++;
        else if ((byte === 0x7d /* } */ || byte === 0x5d /* ] */) && depth > 0) closed = --depth === 0;
      }
    }
    this.depth = depth;
    this.inString = inString;
    this.escaped = escaped;
    this.closed = closed;
    return breaks;
  }
}
