;; PLAIN-encoded Parquet values, in WebAssembly: where each value of a BYTE_ARRAY page is
;; (a 4-byte little-endian length, then the bytes), and INT32 / INT64 values as numbers. The source of src/adapters/logs/parquet-plain-wasm.ts,
;; which `node scripts/build-wasm.mjs` writes (test/unit/line-scanner.test.ts checks the
;; two agree); placePlain in parquet-columns.ts copies the page in, calls $place and copies
;; the places out. WebAssembly because a fresh process ran this loop as unoptimized
;; JavaScript for most of a file: the AWS-documented shape writes sc_bytes as PLAIN
;; strings, 900,000 of them in the bench's file (issue 34).
;;
;; Memory, laid out by the caller: the page's values part at [0, end), then for $place
;; (when some rows are absent) each row's definition level (Int32) at `levels`, then
;; `rows` Int32 starts at `starts`, as many ends at `ends` and (when asked) `rows`
;; Float64 byte counts at `counts` (the rows of one chunk); for $numbers the values
;; (Float64) at `out`.
(module
  ;; The decoders' one memory (decoding-memory.ts).
  (import "decoding" "memory" (memory $memory 1))
  ;; Where the last $place stopped reading (the next chunk's `from`).
  (global $placedTo (export "placedTo") (mut i32) (i32.const 0))

  ;; For each of `rows` rows: a row whose level is not `maxLevel` (when `levels` is not 0)
  ;; has no value (an empty span where the next value would start); a present row's
  ;; value is read. Places are written plus `base` (where the part starts in its page).
  ;; When `counts` is not 0, each row's value read as a byte count (Float64) goes there
  ;; too, as cloudfront-log.ts's parseByteCountBytes reads it: none, empty or `-` 0, up to
  ;; 15 decimal digits their number, anything else -1 (no byte count).
  ;; The values are read from byte `from` on, and where they end is left in $placedTo, so
  ;; that a page's rows are placed a chunk at a time.
  ;; Answers the longest value's length, or -1 when a value runs past `end`.
  (func (export "place") (param $end i32) (param $rows i32) (param $levels i32) (param $maxLevel i32) (param $starts i32) (param $ends i32) (param $base i32) (param $counts i32) (param $from i32) (result i32)
    (local $at i32) (local $row i32) (local $length i32) (local $longest i32) (local $slot i32)
    (local $count f64)
    (local.set $at (local.get $from))
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $row) (local.get $rows)))
        (local.set $slot (i32.shl (local.get $row) (i32.const 2)))
        (local.set $count (f64.const 0))
        (if (i32.or (i32.eqz (local.get $levels))
              (i32.eq (i32.load (i32.add (local.get $levels) (local.get $slot))) (local.get $maxLevel)))
          (then
            (if (i32.gt_u (i32.add (local.get $at) (i32.const 4)) (local.get $end)) (then (return (i32.const -1))))
            (local.set $length (i32.load (local.get $at)))
            (local.set $at (i32.add (local.get $at) (i32.const 4)))
            ;; Unsigned: a length past 2^31 is past the end too.
            (if (i32.gt_u (local.get $length) (i32.sub (local.get $end) (local.get $at))) (then (return (i32.const -1))))
            (i32.store (i32.add (local.get $starts) (local.get $slot)) (i32.add (local.get $at) (local.get $base)))
            (if (local.get $counts)
              (then (local.set $count (call $byteCount (local.get $at) (local.get $length)))))
            (local.set $at (i32.add (local.get $at) (local.get $length)))
            (if (i32.gt_u (local.get $length) (local.get $longest)) (then (local.set $longest (local.get $length)))))
          (else
            (i32.store (i32.add (local.get $starts) (local.get $slot)) (i32.add (local.get $at) (local.get $base)))))
        (i32.store (i32.add (local.get $ends) (local.get $slot)) (i32.add (local.get $at) (local.get $base)))
        (if (local.get $counts)
          (then (f64.store (i32.add (local.get $counts) (i32.shl (local.get $row) (i32.const 3))) (local.get $count))))
        (local.set $row (i32.add (local.get $row) (i32.const 1)))
        (br $rows)))
    (global.set $placedTo (local.get $at))
    (local.get $longest))

  ;; The `length` bytes at `at` as a byte count: empty or `-` 0, 1 to 15 decimal digits
  ;; their number, else -1.
  (func $byteCount (param $at i32) (param $length i32) (result f64)
    (local $end i32) (local $digit i32) (local $total i64)
    (if (i32.eqz (local.get $length)) (then (return (f64.const 0))))
    (if (i32.and (i32.eq (local.get $length) (i32.const 1)) (i32.eq (i32.load8_u (local.get $at)) (i32.const 45)))
      (then (return (f64.const 0))))
    (if (i32.gt_u (local.get $length) (i32.const 15)) (then (return (f64.const -1))))
    (local.set $end (i32.add (local.get $at) (local.get $length)))
    (block $done
      (loop $digits
        (br_if $done (i32.ge_u (local.get $at) (local.get $end)))
        (local.set $digit (i32.sub (i32.load8_u (local.get $at)) (i32.const 48)))
        (if (i32.gt_u (local.get $digit) (i32.const 9)) (then (return (f64.const -1))))
        (local.set $total (i64.add (i64.mul (local.get $total) (i64.const 10)) (i64.extend_i32_u (local.get $digit))))
        (local.set $at (i32.add (local.get $at) (i32.const 1)))
        (br $digits)))
    (f64.convert_i64_s (local.get $total)))

  ;; `count` PLAIN INT64 (`int64` 1) or INT32 values from `in` as numbers (Float64) at `out`,
  ;; as parquet-columns.ts's readNumbers states them: `unit` 0 the integer itself, 1 days,
  ;; 2 milliseconds, 3 microseconds since the epoch, the last three as epoch milliseconds
  ;; (microseconds divided toward zero), NaN past what a Date holds (8.64e15 ms). Answers
  ;; 0, or 1 when an INT64 is past 2^53 (no exact double: the caller reads the page otherwise).
  (func (export "numbers") (param $in i32) (param $count i32) (param $int64 i32) (param $unit i32) (param $out i32) (result i32)
    (local $i i32) (local $wide i64) (local $value f64)
    (block $done
      (loop $values
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (if (local.get $int64)
          (then
            (local.set $wide (i64.load (i32.add (local.get $in) (i32.shl (local.get $i) (i32.const 3)))))
            (if (i32.or (i64.lt_s (local.get $wide) (i64.const -9007199254740992))
                        (i64.gt_s (local.get $wide) (i64.const 9007199254740991)))
              (then (return (i32.const 1))))
            (local.set $value (f64.convert_i64_s (local.get $wide))))
          (else
            (local.set $value (f64.convert_i32_s (i32.load (i32.add (local.get $in) (i32.shl (local.get $i) (i32.const 2))))))))
        (if (local.get $unit)
          (then
            (if (i32.eq (local.get $unit) (i32.const 1))
              (then (local.set $value (f64.mul (local.get $value) (f64.const 86400000)))))
            (if (i32.eq (local.get $unit) (i32.const 3))
              (then (local.set $value (f64.trunc (f64.div (local.get $value) (f64.const 1000))))))
            (if (i32.eqz (f64.le (f64.abs (local.get $value)) (f64.const 8.64e15)))
              (then (local.set $value (f64.const nan))))))
        (f64.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 3))) (local.get $value))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $values)))
    (i32.const 0))
)
