;; Parquet's RLE / bit-packed hybrid encoding (definition levels and dictionary indices),
;; decoded in WebAssembly. The source of src/adapters/logs/parquet-rle-wasm.ts, which
;; `node scripts/build-wasm.mjs` writes (test/unit/line-scanner.test.ts checks the two
;; agree); src/adapters/logs/parquet-rle.ts copies the data in, calls $decode and copies
;; the values out. WebAssembly because a fresh process (a Lambda's first object, a
;; `tally count`) ran this loop as unoptimized JavaScript for most of a file, where V8's
;; first tier (Liftoff) compiles a module at once (issue 34).
;;
;; The format (https://parquet.apache.org/docs/file-format/data-pages/encodings/#run-length-encoding--bit-packing-hybrid-rle--3):
;; runs, each a ULEB128 header; `header & 1` = 0: `header >> 1` repeats of one value
;; stored in ceil(width / 8) little-endian bytes; 1: `header >> 1` groups of 8 values,
;; each `width` bits, packed from the least significant bit. The last group may hold
;; padding values past the ones wanted: they are not written.
;;
;; Memory, laid out by the caller: the data at [at, end), then at least 8 bytes the
;; caller owns (a value is read from the 8 bytes at its first byte and masked: bytes past
;; `end` never reach a value wanted), and the output, `count` Int32 values at `out`.
(module
  ;; The decoders' one memory (decoding-memory.ts).
  (import "decoding" "memory" (memory $memory 1))
  ;; Of the last $decode: the largest value written (-1: none), how many equal its
  ;; target, and on status 1 how many values were written before the data ended.
  (global $largest (export "largest") (mut i32) (i32.const -1))
  (global $matches (export "matches") (mut i32) (i32.const 0))
  (global $seen (export "seen") (mut i32) (i32.const 0))

  ;; Decodes `count` values of `width` bits (1-32) from [at, end) to `out`. Answers 0, or
  ;; why not: 1 the runs end before `count` values, 2 a run header longer than 6 bytes
  ;; (past 2^42), 3 an RLE run's value past the end of the data, 4 an RLE value past
  ;; 2^31, 5 a bit-packed run's values wanted past the end of the data, 6 a bit-packed
  ;; value past 2^31.
  (func (export "decode") (param $at i32) (param $end i32) (param $width i32) (param $out i32) (param $count i32) (param $target i32) (result i32)
    (local $seen i32) (local $largest i32) (local $matches i32)
    (local $header i64) (local $shift i64) (local $byte i32)
    (local $valueBytes i32) (local $value i64) (local $v i32)
    (local $stop i64) (local $groups i64) (local $wanted i32) (local $needed i64)
    (local $bit i32) (local $mask i64) (local $p i32) (local $q i32) (local $runBytes i64)
    (local.set $largest (i32.const -1))
    (local.set $valueBytes (i32.shr_u (i32.add (local.get $width) (i32.const 7)) (i32.const 3)))
    (local.set $mask (i64.sub (i64.shl (i64.const 1) (i64.extend_i32_u (local.get $width))) (i64.const 1)))
    (block $done
      (loop $runs
        (br_if $done (i32.ge_s (local.get $seen) (local.get $count)))
        ;; The run's header, a ULEB128 varint (up to 6 bytes, as the JavaScript reader took).
        (local.set $header (i64.const 0))
        (local.set $shift (i64.const 0))
        (block $headerRead
          (loop $headerByte
            (if (i32.ge_u (local.get $at) (local.get $end))
              (then
                (global.set $seen (local.get $seen))
                (return (i32.const 1))))
            (local.set $byte (i32.load8_u (local.get $at)))
            (local.set $at (i32.add (local.get $at) (i32.const 1)))
            (local.set $header
              (i64.or (local.get $header)
                (i64.shl (i64.extend_i32_u (i32.and (local.get $byte) (i32.const 0x7f))) (local.get $shift))))
            (br_if $headerRead (i32.lt_u (local.get $byte) (i32.const 0x80)))
            (local.set $shift (i64.add (local.get $shift) (i64.const 7)))
            (if (i64.gt_u (local.get $shift) (i64.const 35)) (then (return (i32.const 2))))
            (br $headerByte)))
        (if (i64.eqz (i64.and (local.get $header) (i64.const 1)))
          (then
            ;; RLE: one value, repeated.
            (if (i32.gt_u (i32.add (local.get $at) (local.get $valueBytes)) (local.get $end)) (then (return (i32.const 3))))
            (local.set $value (i64.const 0))
            (local.set $v (i32.const 0))
            (block $valueRead
              (loop $valueByte
                (br_if $valueRead (i32.ge_u (local.get $v) (local.get $valueBytes)))
                (local.set $value
                  (i64.or (local.get $value)
                    (i64.shl (i64.load8_u (i32.add (local.get $at) (local.get $v))) (i64.extend_i32_u (i32.shl (local.get $v) (i32.const 3))))))
                (local.set $v (i32.add (local.get $v) (i32.const 1)))
                (br $valueByte)))
            (local.set $at (i32.add (local.get $at) (local.get $valueBytes)))
            (if (i64.gt_u (local.get $value) (i64.const 0x7fffffff)) (then (return (i32.const 4))))
            (local.set $v (i32.wrap_i64 (local.get $value)))
            ;; stop = min(count, seen + header / 2)
            (local.set $stop (i64.add (i64.extend_i32_u (local.get $seen)) (i64.shr_u (local.get $header) (i64.const 1))))
            (if (i64.gt_u (local.get $stop) (i64.extend_i32_u (local.get $count)))
              (then (local.set $stop (i64.extend_i32_u (local.get $count)))))
            (if (i32.gt_s (i32.wrap_i64 (local.get $stop)) (local.get $seen))
              (then
                (if (i32.gt_s (local.get $v) (local.get $largest)) (then (local.set $largest (local.get $v))))
                (if (i32.eq (local.get $v) (local.get $target))
                  (then (local.set $matches (i32.add (local.get $matches) (i32.sub (i32.wrap_i64 (local.get $stop)) (local.get $seen)))))))
              )
            (local.set $p (i32.add (local.get $out) (i32.shl (local.get $seen) (i32.const 2))))
            (local.set $q (i32.add (local.get $out) (i32.shl (i32.wrap_i64 (local.get $stop)) (i32.const 2))))
            (block $filled
              (loop $fill
                (br_if $filled (i32.ge_u (local.get $p) (local.get $q)))
                (i32.store (local.get $p) (local.get $v))
                (local.set $p (i32.add (local.get $p) (i32.const 4)))
                (br $fill)))
            (local.set $seen (i32.wrap_i64 (local.get $stop))))
          (else
            ;; Bit-packed: groups of 8 values.
            (local.set $groups (i64.shr_u (local.get $header) (i64.const 1)))
            (local.set $wanted (i32.sub (local.get $count) (local.get $seen)))
            (if (i64.lt_u (i64.shl (local.get $groups) (i64.const 3)) (i64.extend_i32_u (local.get $wanted)))
              (then (local.set $wanted (i32.wrap_i64 (i64.shl (local.get $groups) (i64.const 3))))))
            (local.set $runBytes (i64.mul (local.get $groups) (i64.extend_i32_u (local.get $width))))
            ;; Only the bytes of the values wanted need be there (a writer may end the data inside the padding).
            (local.set $needed
              (i64.shr_u (i64.add (i64.mul (i64.extend_i32_u (local.get $wanted)) (i64.extend_i32_u (local.get $width))) (i64.const 7)) (i64.const 3)))
            (if (i64.gt_u (i64.add (i64.extend_i32_u (local.get $at)) (local.get $needed)) (i64.extend_i32_u (local.get $end)))
              (then (return (i32.const 5))))
            (local.set $p (i32.add (local.get $out) (i32.shl (local.get $seen) (i32.const 2))))
            (local.set $q (i32.add (local.get $p) (i32.shl (local.get $wanted) (i32.const 2))))
            (local.set $bit (i32.const 0))
            (block $unpacked
              (loop $unpack
                (br_if $unpacked (i32.ge_u (local.get $p) (local.get $q)))
                (local.set $value
                  (i64.and
                    (i64.shr_u
                      (i64.load (i32.add (local.get $at) (i32.shr_u (local.get $bit) (i32.const 3))))
                      (i64.extend_i32_u (i32.and (local.get $bit) (i32.const 7))))
                    (local.get $mask)))
                (if (i64.gt_u (local.get $value) (i64.const 0x7fffffff)) (then (return (i32.const 6))))
                (local.set $v (i32.wrap_i64 (local.get $value)))
                (i32.store (local.get $p) (local.get $v))
                (if (i32.gt_s (local.get $v) (local.get $largest)) (then (local.set $largest (local.get $v))))
                (local.set $matches (i32.add (local.get $matches) (i32.eq (local.get $v) (local.get $target))))
                (local.set $bit (i32.add (local.get $bit) (local.get $width)))
                (local.set $p (i32.add (local.get $p) (i32.const 4)))
                (br $unpack)))
            (local.set $seen (i32.add (local.get $seen) (local.get $wanted)))
            ;; at += min(runBytes, end - at)
            (if (i64.lt_u (local.get $runBytes) (i64.extend_i32_u (i32.sub (local.get $end) (local.get $at))))
              (then (local.set $at (i32.add (local.get $at) (i32.wrap_i64 (local.get $runBytes)))))
              (else (local.set $at (local.get $end))))))
        (br $runs)))
    (global.set $largest (local.get $largest))
    (global.set $matches (local.get $matches))
    (global.set $seen (local.get $seen))
    (i32.const 0))

  ;; Each of the `count` Int32 values at `values` (dictionary indices, each checked below
  ;; the dictionary's length by the caller) replaced by its entry of the Float64 dictionary
  ;; at `dictionary`, into Float64 at `out`: a typed column's dictionary-encoded rows as
  ;; numbers (parquet-columns.ts), without a JavaScript loop over every row.
  (func (export "gather") (param $values i32) (param $count i32) (param $dictionary i32) (param $out i32)
    (local $i i32)
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (f64.store
          (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 3)))
          (f64.load (i32.add (local.get $dictionary)
            (i32.shl (i32.load (i32.add (local.get $values) (i32.shl (local.get $i) (i32.const 2)))) (i32.const 3)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $rows))))
)
