import { COLUMN_SUM_WASM_BASE64 } from './column-sum-wasm';

/**
 * The memory and calls of column-sum.wat, the per-row part of ColumnCounting
 * (column-counting.ts) for host pairs and no metric rules: a chunk of each column's rows
 * copied in, $sum called until the chunk is counted, what it stops for found by the
 * caller. One instance per count at a time (its sums are that count's), kept for the next
 * count when the count hands its sums over.
 */

/** Rows of each column copied in per call: 32,768 rows of five columns are under a megabyte. */
export const SUM_CHUNK_ROWS = 32_768;
/** Account-day cells: accounts (at most 8,192) × 64 days (ColumnCounting's MAX_ACCOUNTS, MAX_DAYS). */
const CELLS = 8192 * 64;
/** Per numbered cell: 25 hour slots of two Float64 sums (requests, bytes). */
const SLOT_BYTES = 16;
const HOUR_SLOTS = 25;
const WASM_PAGE_BYTES = 65_536;
/** The most memory an instance grows to (a file of 8,192 accounts over 64 days needs about 220 MB). */
const MAX_MEMORY_BYTES = 1024 * 1024 * 1024;
/** Typed date values column-sum.wat knows the days of at once. */
const DAY_VALUES = 8;
/** Instances kept for later counts, and the most memory one may hold to be kept (a bench file's count needs about 4 MiB). */
const POOL_SIZE = 2;
const POOL_MAX_BYTES = 32 * 1024 * 1024;

/** Why $sum stopped (column-sum.wat's $reason). */
export const SumStop = { Day: 1, Bytes: 3, Pair: 4, Line: 5, Room: 6 } as const;

type Table = 'day' | 'pair';

/** A host column's dictionary: entry i's text is `bytes[starts[i], ends[i])`. */
export interface HostDictionary {
  readonly bytes: Uint8Array;
  readonly starts: Int32Array;
  readonly ends: Int32Array;
}

/** Hosts remembered at most (the caller's cache holds 4,096: ColumnCounting's KEY_CACHE_LIMIT), their slots (a power of two, twice as many), and the bytes of their texts. */
const MAX_HOSTS = 4096;
const HOST_SLOTS = 8192;
const HOST_ARENA_BYTES = 256 * 1024;

export class ColumnSumKernel {
  private readonly wasm: SumExports;
  private buffer: ArrayBuffer;
  /** Where the next region goes: regions are placed one after another, never moved back. */
  private end: number;
  private readonly inputs: { date: number; time: number; bytes: number; x: number; c: number };
  /** Per table: the JavaScript cache it was last loaded from (this count's); and per region its room (entries or bytes; kept from count to count). */
  private readonly loaded = new Map<Table | 'time' | 'bytes', Int32Array | Float64Array>();
  private readonly rooms = new Map<Table | 'time' | 'bytes' | 'scratch' | 'hostScratch', number>();
  private scratchAt = 0;
  private hostScratchAt = 0;
  /** The generation of the caller's host cache the hosts remembered are of (-1: none yet). */
  private hostGeneration = -1;
  private readonly hostArenaStart: number;
  private readonly hostArenaLimit: number;
  /** Typed date values set so far (the next goes in slot this modulo {@link DAY_VALUES}). */
  private dayValuesSet = 0;
  private ints!: Int32Array;
  private floats!: Float64Array;

  private constructor() {
    this.wasm = new WebAssembly.Instance(sumModule(), {}).exports as unknown as SumExports;
    // The cells at 0, then the chunk's columns (8-byte aligned), then the sums.
    let at = CELLS * 4;
    const region = (bytes: number) => {
      const start = at;
      at += bytes;
      return start;
    };
    this.inputs = { date: region(8 * SUM_CHUNK_ROWS), time: region(4 * SUM_CHUNK_ROWS), bytes: region(8 * SUM_CHUNK_ROWS), x: region(4 * SUM_CHUNK_ROWS), c: region(4 * SUM_CHUNK_ROWS) };
    this.end = at;
    this.wasm.cells.value = 0;
    this.buffer = this.wasm.memory.buffer;
    this.placeSums(256);
    this.wasm.dayValues.value = this.allocate(16 * DAY_VALUES);
    const constants = (this.wasm.constants.value = this.allocate(24));
    this.wasm.hostSlots.value = this.allocate(4 * HOST_SLOTS);
    this.wasm.hostMask.value = HOST_SLOTS - 1;
    this.wasm.hostEntries.value = this.allocate(16 * MAX_HOSTS);
    this.hostArenaStart = this.allocate(HOST_ARENA_BYTES);
    this.hostArenaLimit = this.hostArenaStart + HOST_ARENA_BYTES;
    this.wasm.hostArenaEnd.value = this.hostArenaStart;
    this.views();
    this.clearDayValues();
    // What an absent column is read as (column-sum.wat's $constants).
    this.ints[constants >> 2] = -1;
    this.floats[(constants >> 3) + 1] = 0;
    this.ints[(constants >> 2) + 4] = 1;
  }

  /** An instance with no sums. */
  static acquire(): ColumnSumKernel {
    return POOL.pop() ?? new ColumnSumKernel();
  }

  /** Done with: its sums must have been taken ({@link forEachCell}). */
  release(): void {
    this.loaded.clear();
    // Hosts' accounts are one count's ids.
    this.clearHosts();
    this.hostGeneration = -1;
    // A memory grown for a file of many account-days or a large dictionary is let go
    // (a module's memory never shrinks): kept, it would hold that much for the process's life.
    if (POOL.length < POOL_SIZE && this.wasm.memory.buffer.byteLength <= POOL_MAX_BYTES) POOL.push(this);
  }

  /** How the rows' columns are read (column-sum.wat's modes). */
  configure(modes: { day: 0 | 1; time: 0 | 1; bytes: 0 | 1 | 2 | 3; hosts: number; cWidth: number }): void {
    const wasm = this.wasm;
    wasm.dayMode.value = modes.day;
    wasm.timeMode.value = modes.time;
    wasm.bytesMode.value = modes.bytes;
    wasm.hosts.value = modes.hosts;
    wasm.cWidth.value = modes.cWidth;
  }

  /** Makes table `which` (Int32, per entry + 1 or per pair) hold `source`'s values, unless it holds them already; answers whether it was loaded now. */
  table(which: Table, source: Int32Array): boolean {
    if (this.loaded.get(which) === source) return false;
    const global = which === 'day' ? this.wasm.dayTable : this.wasm.pairTable;
    const at = this.room(which, source.length, 4);
    if (at !== undefined) global.value = at;
    this.ints.set(source, global.value >> 2);
    this.loaded.set(which, source);
    return true;
  }

  /**
   * Remembers `account` for the host text `bytes[start, end)` (as the caller's cache has
   * it), for {@link prefillPairs}. The generation is the caller's cache's: when it changes
   * (the cache was cleared), so are the hosts remembered here.
   */
  addHost(generation: number, bytes: Uint8Array, start: number, end: number, account: number): void {
    this.syncHosts(generation);
    const wasm = this.wasm;
    const length = end - start;
    if (length > HOST_ARENA_BYTES) return;
    if (wasm.hostCount.value >= MAX_HOSTS || wasm.hostArenaEnd.value + length > this.hostArenaLimit) this.clearHosts();
    new Uint8Array(this.buffer).set(bytes.subarray(start, end), wasm.hostArenaEnd.value);
    wasm.hostAdd(length, account);
  }

  /**
   * Fills the pair table's entries (loaded by {@link table}) of the pairs whose viewer host
   * is remembered ({@link addHost}), or which have no host (`none`, the caller's account of
   * no host; -2 not known yet): a new row group's dictionaries make every pair new, and each
   * was a stop of $sum, found in the caller's cache (issue 34: some 1,600 stops of the
   * typed bench file, and the JavaScript they ran compiled by V8 on its other threads).
   */
  prefillPairs(generation: number, x: HostDictionary | undefined, c: HostDictionary | undefined, cWidth: number, none: number): void {
    this.syncHosts(generation);
    if (this.wasm.hostCount.value === 0 && none < 0) return;
    const xSize = x === undefined ? 0 : x.bytes.length + 8 * x.starts.length;
    const cSize = c === undefined ? 0 : c.bytes.length + 8 * c.starts.length;
    const scratchAt = this.room('hostScratch', xSize + cSize + 16, 1);
    if (scratchAt !== undefined) this.hostScratchAt = scratchAt;
    let at = this.hostScratchAt;
    const place = (dictionary: HostDictionary | undefined): [number, number, number, number] => {
      if (dictionary === undefined) return [0, 0, 0, 0];
      const bytesAt = at;
      new Uint8Array(this.buffer).set(dictionary.bytes, bytesAt);
      const startsAt = (bytesAt + dictionary.bytes.length + 3) & ~3;
      const endsAt = startsAt + 4 * dictionary.starts.length;
      this.ints.set(dictionary.starts, startsAt >> 2);
      this.ints.set(dictionary.ends, endsAt >> 2);
      at = endsAt + 4 * dictionary.ends.length;
      return [bytesAt, startsAt, endsAt, dictionary.starts.length];
    };
    const [xBytes, xStarts, xEnds, xCount] = place(x);
    const [cBytes, cStarts, cEnds, cCount] = place(c);
    this.wasm.prefillPairs(xBytes, xStarts, xEnds, xCount, cBytes, cStarts, cEnds, cCount, cWidth, none);
  }

  /** Forgets the hosts remembered when the caller's cache is no longer of `generation`. */
  private syncHosts(generation: number): void {
    if (generation === this.hostGeneration) return;
    this.clearHosts();
    this.hostGeneration = generation;
  }

  private clearHosts(): void {
    const wasm = this.wasm;
    new Int32Array(this.buffer, wasm.hostSlots.value, HOST_SLOTS).fill(0);
    wasm.hostCount.value = 0;
    wasm.hostArenaEnd.value = this.hostArenaStart;
  }

  /**
   * Makes the time table hold the verdicts of every entry of `dictionary` (found here, in
   * $timeVerdicts: a time dictionary has an entry per second of the row group, 20,000
   * and more, each a stop when found one by one), and `cache`, its JavaScript cache, too;
   * unless it holds them already.
   */
  timeTable(dictionary: { readonly bytes: Uint8Array; readonly starts: Int32Array; readonly ends: Int32Array }, cache: Int32Array): void {
    if (this.loaded.get('time') === cache) return;
    const count = dictionary.starts.length;
    if (cache.length !== count + 1) throw new RangeError(`a time cache of ${cache.length} for ${count} entries`);
    const tableAt = this.room('time', count + 1, 4);
    if (tableAt !== undefined) this.wasm.timeTable.value = tableAt;
    // The dictionary's text and places in a scratch region (kept for the next dictionary).
    const scratchAt = this.room('scratch', dictionary.bytes.length + 8 * count + 8, 1);
    if (scratchAt !== undefined) this.scratchAt = scratchAt;
    const startsAt = (this.scratchAt + dictionary.bytes.length + 3) & ~3;
    const endsAt = startsAt + 4 * count;
    new Uint8Array(this.buffer).set(dictionary.bytes, this.scratchAt);
    this.ints.set(dictionary.starts, startsAt >> 2);
    this.ints.set(dictionary.ends, endsAt >> 2);
    const table = this.wasm.timeTable.value;
    this.wasm.timeVerdicts(this.scratchAt, startsAt, endsAt, count, table);
    cache.set(this.ints.subarray(table >> 2, (table >> 2) + count + 1));
    this.loaded.set('time', cache);
  }

  /** Makes the byte count table (Float64, per entry + 1) hold `source`'s values, unless it holds them already. */
  bytesTable(source: Float64Array): void {
    if (this.loaded.get('bytes') === source) return;
    const at = this.room('bytes', source.length, 8);
    if (at !== undefined) this.wasm.bytesTable.value = at;
    this.floats.set(source, this.wasm.bytesTable.value >> 3);
    this.loaded.set('bytes', source);
  }

  /** Sets entry `at` of an Int32 table (as its JavaScript cache now says). */
  setEntry(which: Table, at: number, value: number): void {
    const base = which === 'day' ? this.wasm.dayTable.value : this.wasm.pairTable.value;
    this.ints[(base >> 2) + at] = value;
  }

  setByteCount(at: number, value: number): void {
    this.floats[(this.wasm.bytesTable.value >> 3) + at] = value;
  }

  /** Rows of the typed date `value` are of day `day`: kept among the eight column-sum.wat looks in ($dayValues), the oldest dropped. */
  setDayValue(value: number, day: number): void {
    const at = this.wasm.dayValues.value + 16 * (this.dayValuesSet++ % DAY_VALUES);
    this.floats[at >> 3] = value;
    this.ints[(at >> 2) + 2] = day;
  }

  /** No typed date values known (a new count's). */
  private clearDayValues(): void {
    const at = this.wasm.dayValues.value;
    for (let slot = 0; slot < DAY_VALUES; slot++) this.floats[(at >> 3) + 2 * slot] = Number.NaN;
    this.dayValuesSet = 0;
  }

  /** Copies rows `[from, from + size)` of a column in, as the chunk's `column`. */
  input(column: 'date' | 'time' | 'x' | 'c' | 'bytes', values: Int32Array | Float64Array, from: number, size: number): void {
    const at = this.inputs[column];
    if (values instanceof Float64Array) this.floats.set(values.subarray(from, from + size), at >> 3);
    else this.ints.set(values.subarray(from, from + size), at >> 2);
    if (column === 'date') this.wasm.dateIn.value = at;
    else if (column === 'time') this.wasm.timeIn.value = at;
    else if (column === 'bytes') this.wasm.bytesIn.value = at;
    else if (column === 'x') this.wasm.xIn.value = at;
    else this.wasm.cIn.value = at;
  }

  /** Counts the chunk's rows `[from, to)`: answers the row it stopped at (`to`: all), {@link reason} why. */
  sum(from: number, to: number): number {
    return this.wasm.sum(from, to);
  }

  get reason(): number {
    return this.wasm.reason.value;
  }

  /** Makes room for twice the cells numbered so far (the stop {@link SumStop.Room}). */
  grow(): void {
    this.placeSums(2 * this.wasm.capacity.value);
  }

  /**
   * Calls `take(cell, slots, at)` for every cell with rows, its 25 hour slots of two sums
   * (requests, bytes) at `slots[at]` (slot 0: hour not known), then clears the sums: the
   * instance is as new.
   */
  forEachCell(take: (cell: number, slots: Float64Array, at: number) => void): void {
    const wasm = this.wasm;
    const numbered = wasm.numbered.value;
    const ints = this.ints;
    const floats = this.floats;
    const dayCells = wasm.dayCells.value >> 2;
    const cells = wasm.cells.value >> 2;
    const sums = wasm.sums.value >> 3;
    for (let number = 0; number < numbered; number++) {
      const cell = ints[dayCells + number]!;
      take(cell, floats, sums + number * HOUR_SLOTS * 2);
      ints[cells + cell] = 0;
    }
    floats.fill(0, sums, sums + numbered * HOUR_SLOTS * 2);
    wasm.numbered.value = 0;
    this.clearDayValues();
  }

  /** Puts the cells' numbers and sums in a region of room for `capacity` cells, the ones so far copied over. */
  private placeSums(capacity: number): void {
    const wasm = this.wasm;
    const room = Math.min(capacity, CELLS);
    const dayCells = this.allocate(4 * room);
    const sums = this.allocate(SLOT_BYTES * HOUR_SLOTS * room);
    const numbered = wasm.numbered.value;
    if (numbered > 0) {
      const bytes = new Uint8Array(this.buffer);
      bytes.copyWithin(dayCells, wasm.dayCells.value, wasm.dayCells.value + 4 * numbered);
      bytes.copyWithin(sums, wasm.sums.value, wasm.sums.value + SLOT_BYTES * HOUR_SLOTS * numbered);
    }
    wasm.dayCells.value = dayCells;
    wasm.sums.value = sums;
    wasm.capacity.value = room;
  }

  /**
   * A new region for `which` when its region holds fewer than `count` values of `size`
   * bytes (undefined: it holds them). Made half as large again as asked: each row group
   * has dictionaries of its own, each a little larger than the last as often as not, and
   * a region made to measure was made anew for nearly every one (seven times, 4.5 MB of
   * new memory, over the typed bench file: new memory costs a page fault per 4 KiB, issue 34).
   */
  private room(which: Table | 'time' | 'bytes' | 'scratch' | 'hostScratch', count: number, size: number): number | undefined {
    if ((this.rooms.get(which) ?? 0) >= count) return undefined;
    const room = Math.ceil(count * 1.5);
    this.rooms.set(which, room);
    return this.allocate(room * size);
  }

  /** A new region of `bytes` (8-byte aligned) at the end, the memory grown to hold it. */
  private allocate(bytes: number): number {
    const at = (this.end + 7) & ~7;
    const needed = at + bytes;
    if (needed > MAX_MEMORY_BYTES) throw new RangeError(`column sums of ${needed} bytes: more than a count holds`);
    const memory = this.wasm.memory;
    if (needed > memory.buffer.byteLength) {
      memory.grow(Math.ceil((needed - memory.buffer.byteLength) / WASM_PAGE_BYTES));
      this.views();
    }
    this.end = needed;
    return at;
  }

  private views(): void {
    this.buffer = this.wasm.memory.buffer;
    this.ints = new Int32Array(this.buffer);
    this.floats = new Float64Array(this.buffer);
  }
}

const POOL: ColumnSumKernel[] = [];

/** The few WebAssembly names used here (the project's TypeScript lib has no DOM types). */
declare const WebAssembly: {
  compile(bytes: Uint8Array): Promise<object>;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: Record<string, unknown> };
};

interface Global<T> {
  value: T;
}

interface SumExports {
  readonly memory: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  readonly sum: (from: number, to: number) => number;
  readonly timeVerdicts: (bytes: number, starts: number, ends: number, count: number, out: number) => void;
  readonly hostAdd: (length: number, account: number) => void;
  readonly prefillPairs: (xBytes: number, xStarts: number, xEnds: number, xCount: number, cBytes: number, cStarts: number, cEnds: number, cCount: number, cWidth: number, none: number) => void;
  readonly hostSlots: Global<number>;
  readonly hostMask: Global<number>;
  readonly hostEntries: Global<number>;
  readonly hostCount: Global<number>;
  readonly hostArenaEnd: Global<number>;
  readonly dayMode: Global<number>;
  readonly timeMode: Global<number>;
  readonly bytesMode: Global<number>;
  readonly hosts: Global<number>;
  readonly cWidth: Global<number>;
  readonly dayValues: Global<number>;
  readonly constants: Global<number>;
  readonly cells: Global<number>;
  readonly dayCells: Global<number>;
  readonly sums: Global<number>;
  readonly numbered: Global<number>;
  readonly capacity: Global<number>;
  readonly dayTable: Global<number>;
  readonly timeTable: Global<number>;
  readonly bytesTable: Global<number>;
  readonly pairTable: Global<number>;
  readonly dateIn: Global<number>;
  readonly timeIn: Global<number>;
  readonly bytesIn: Global<number>;
  readonly xIn: Global<number>;
  readonly cIn: Global<number>;
  readonly reason: Global<number>;
}

let compiled: object | undefined;

function sumModule(): object {
  compiled ??= new WebAssembly.Module(Buffer.from(COLUMN_SUM_WASM_BASE64, 'base64'));
  return compiled;
}

/**
 * Compiles the module on V8's other threads, for a reader to start before it has rows to
 * count (a Parquet file's footer is read meanwhile): compiled on first use, it was the
 * count's main thread's work (issue 34).
 */
export async function prepareColumnSums(): Promise<void> {
  if (compiled !== undefined) return;
  const module = await WebAssembly.compile(Buffer.from(COLUMN_SUM_WASM_BASE64, 'base64'));
  compiled ??= module;
}
