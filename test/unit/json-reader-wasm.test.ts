import { jsonReaderModule } from '../../src/domain/logs/json-reader-wasm';

/** The few WebAssembly names used here (the project's TypeScript lib has no DOM types). */
declare const WebAssembly: {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Memory: new (descriptor: { initial: number }) => { readonly buffer: ArrayBuffer };
  Instance: new (module: object, imports: object) => { readonly exports: Record<string, (...args: number[]) => number> };
};

const glueOf = (keys: readonly string[]) => keys.map((key, k) => Buffer.from(`${k === 0 ? '{"' : '","'}${key}":"`, 'latin1'));

/**
 * The module written for one JSON template (json-reader-wasm.ts). What it counts is held
 * to the general reader by test/unit/json-scanner.property.test.ts; here, that it is a
 * valid module for any template the scanner takes, and what its readers leave in memory.
 */
describe('the readers written for a JSON template', () => {
  it('are a valid module for glues of any length, up to 480 keys and slot 255', () => {
    for (const length of [1, 9, 10, 11, 25, 26, 27, 42, 43, 70]) {
      const keys = Array.from({ length: 3 }, (_, k) => `${k}${'k'.repeat(length - 1)}`);
      expect(WebAssembly.validate(jsonReaderModule(glueOf(keys), [1, 0, 2]))).toBe(true);
    }
    const many = Array.from({ length: 480 }, (_, k) => `key-${k}`);
    expect(WebAssembly.validate(jsonReaderModule(glueOf(many), many.map((_, k) => (k < 255 ? k + 1 : 0))))).toBe(true);
  });

  describe('line', () => {
    // Key a is slot 1, bb slot 2 (empty here), a glue of 16 bytes (exactly one block)
    // not read, and a glue longer than two blocks, slot 3.
    const keys = ['a', 'bb', 'sixteen-b', `long-${'g'.repeat(30)}`];
    const module = new WebAssembly.Module(jsonReaderModule(glueOf(keys), [1, 2, 0, 3]));
    const memory = new WebAssembly.Memory({ initial: 1 });
    const asked: number[] = [];
    // The main module's exact test, as far as these lines need it: a '\' ends the fit.
    const bytes = new Uint8Array(memory.buffer);
    const valueEnd = (p: number) => {
      asked.push(p);
      for (let at = p; ; at++) {
        if (bytes[at] === 34) return at;
        if (bytes[at] === 92 || bytes[at]! < 32) return -1;
      }
    };
    const { line } = new WebAssembly.Instance(module, { env: { memory, valueEnd } }).exports;
    const words = new Int32Array(memory.buffer);
    const LINE = 1024;
    const REC = 8192;
    const put = (text: string) => {
      bytes.fill(0, LINE, LINE + 512);
      bytes.set(Buffer.from(`${text}\n`, 'utf8'), LINE);
      words.fill(-7, REC >> 2, (REC >> 2) + 16);
    };
    const slot = (n: number) => [words[(REC + 32 + 8 * n) >> 2], words[(REC + 36 + 8 * n) >> 2]];

    beforeEach(() => asked.splice(0));

    it("records each value read where it is, an empty one as [100, 101), and answers where the last ends", () => {
      const text = `{"a":"x1","bb":"","sixteen-b":"${'v'.repeat(40)}","${keys[3]}":"tail é"}`;
      put(text);

      const end = line!(LINE, REC);

      expect(end).toBe(LINE + Buffer.byteLength(text) - 2);
      expect(slot(1)).toEqual([LINE + 6, LINE + 8]);
      expect(slot(2)).toEqual([100, 101]);
      expect(slot(3)).toEqual([end - Buffer.byteLength('tail é'), end]);
      // The UTF-8 of é stopped the search on the way; the exact test went on.
      expect(asked).toHaveLength(1);
    });

    it('answers -1 for a glue that differs anywhere, or a value with a backslash or a control byte', () => {
      const good = `{"a":"x","bb":"y","sixteen-b":"z","${keys[3]}":"w"}`;
      put(good);
      expect(line!(LINE, REC)).toBeGreaterThan(0);
      for (const bad of [
        good.replace('"sixteen-b"', '"sixteen-c"'),
        good.replace('"sixteen-b":', '"sixteen-b" :'),
        good.replace(`${keys[3]}`, `${keys[3]!.slice(0, -1)}h`),
        good.replace('"x"', '"x\\u0041"'),
        good.replace('"y"', '"y\tz"'),
        good.replace('{"a"', '{ "a"'),
        // Only the first byte of the line, the first byte of the long glue's third block,
        // the last byte of a glue of one block, and of the long one.
        good.replace('{"a"', '["a"'),
        good.replace(keys[3]!, `${keys[3]!.slice(0, 29)}G${keys[3]!.slice(30)}`),
        good.replace('"sixteen-b":"z"', '"sixteen-b":xz"'),
        good.replace(`"${keys[3]}":"w"`, `"${keys[3]}":xw"`),
      ]) {
        put(bad);
        expect(line!(LINE, REC)).toBe(-1);
      }
    });
  });
});
