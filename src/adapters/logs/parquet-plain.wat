;; Where each value of a PLAIN-encoded BYTE_ARRAY page is (a 4-byte little-endian length,
;; then the bytes), in WebAssembly. The source of src/adapters/logs/parquet-plain-wasm.ts,
;; which `node scripts/build-wasm.mjs` writes (test/unit/line-scanner.test.ts checks the
;; two agree); placePlain in parquet-columns.ts copies the page in, calls $place and copies
;; the places out. WebAssembly because a fresh process ran this loop as unoptimized
;; JavaScript for most of a file: the AWS-documented shape writes sc_bytes as PLAIN
;; strings, 900,000 of them in the bench's file (issue 34).
;;
;; Memory, laid out by the caller: the page's values part at [0, end), then (when some
;; rows are absent) each row's definition level (Int32) at `levels`, then `rows` Int32
;; starts at `starts` and as many ends at `ends`.
(module
  (memory (export "memory") 1)

  ;; For each of `rows` rows: a row whose level is not `maxLevel` (when `levels` is not 0)
  ;; has no value (an empty span where the next value would start); a present row's
  ;; value is read. Places are written plus `base` (where the part starts in its page).
  ;; Answers the longest value's length, or -1 when a value runs past `end`.
  (func (export "place") (param $end i32) (param $rows i32) (param $levels i32) (param $maxLevel i32) (param $starts i32) (param $ends i32) (param $base i32) (result i32)
    (local $at i32) (local $row i32) (local $length i32) (local $longest i32) (local $slot i32)
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $row) (local.get $rows)))
        (local.set $slot (i32.shl (local.get $row) (i32.const 2)))
        (if (i32.or (i32.eqz (local.get $levels))
              (i32.eq (i32.load (i32.add (local.get $levels) (local.get $slot))) (local.get $maxLevel)))
          (then
            (if (i32.gt_u (i32.add (local.get $at) (i32.const 4)) (local.get $end)) (then (return (i32.const -1))))
            (local.set $length (i32.load (local.get $at)))
            (local.set $at (i32.add (local.get $at) (i32.const 4)))
            ;; Unsigned: a length past 2^31 is past the end too.
            (if (i32.gt_u (local.get $length) (i32.sub (local.get $end) (local.get $at))) (then (return (i32.const -1))))
            (i32.store (i32.add (local.get $starts) (local.get $slot)) (i32.add (local.get $at) (local.get $base)))
            (local.set $at (i32.add (local.get $at) (local.get $length)))
            (if (i32.gt_u (local.get $length) (local.get $longest)) (then (local.set $longest (local.get $length)))))
          (else
            (i32.store (i32.add (local.get $starts) (local.get $slot)) (i32.add (local.get $at) (local.get $base)))))
        (i32.store (i32.add (local.get $ends) (local.get $slot)) (i32.add (local.get $at) (local.get $base)))
        (local.set $row (i32.add (local.get $row) (i32.const 1)))
        (br $rows)))
    (local.get $longest))
)
