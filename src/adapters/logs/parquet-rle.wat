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
;; Memory, laid out by the caller: the data at [at, end), then at least 16 bytes the
;; caller owns (a run's value and a group of 8 bit-packed values are read in one load of
;; 4, 8 or 16 bytes and masked: bytes past `end` never reach a value wanted), and the
;; output, `count` Int32 values at `out`, then 64 bytes the decoder may write over (an RLE
;; run is written 16 or 64 bytes at a time; the next run writes over what went past).
;;
;; Where the time goes (issue 34, the typed bench file): a time column is runs of about 5
;; repeats (a second's requests), so each run's work is kept short: a one-byte header, its
;; value in one load, largest and matches without branches, the repeats stored 4 at a time.
;; A host column is bit-packed 8-bit indices: values of up to 25 bits are unpacked 8 at a
;; time in SIMD (below), where a value at a time took some 2 ns.
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
  ;;
  ;; A group of 8 values of `width` <= 25 bits is `width` bytes; value k's bits start at
  ;; bit k * width. Values 0-3 are read from one 16-byte load at the group, values 4-7 from
  ;; one at its byte (4 * width) / 8: a swizzle puts each value's 4 bytes (from its first
  ;; byte) in its lane, a multiply by 2^(7 - its first bit in that byte) lines its bits up
  ;; at bit 7 (7 + 25 bits fit in a lane), a shift and a mask leave the value.
  (func (export "decode") (param $at i32) (param $end i32) (param $width i32) (param $out i32) (param $count i32) (param $target i32) (result i32)
    (local $seen i32) (local $largest i32) (local $matches i32)
    (local $header i64) (local $shift i64) (local $byte i32)
    (local $valueBytes i32) (local $valueMask i32) (local $value i64) (local $v i32)
    (local $stop i64) (local $groups i64) (local $wanted i32) (local $needed i64)
    (local $bit i32) (local $mask i64) (local $p i32) (local $q i32) (local $runBytes i64)
    (local $n i32) (local $g i32) (local $full i32) (local $hiAt i32)
    (local $repeat v128) (local $lo v128) (local $hi v128)
    (local $swizzleLo v128) (local $swizzleHi v128) (local $lineLo v128) (local $lineHi v128)
    (local $widthMask v128) (local $largestLanes v128) (local $matchLanes v128) (local $targetLanes v128)
    (local.set $largest (i32.const -1))
    (local.set $valueBytes (i32.shr_u (i32.add (local.get $width) (i32.const 7)) (i32.const 3)))
    (local.set $valueMask (i32.shr_u (i32.const -1) (i32.sub (i32.const 32) (i32.shl (local.get $valueBytes) (i32.const 3)))))
    (local.set $mask (i64.sub (i64.shl (i64.const 1) (i64.extend_i32_u (local.get $width))) (i64.const 1)))
    ;; The SIMD unpacking's constants for this width (used for widths up to 25).
    (local.set $hiAt (i32.shr_u (i32.shl (local.get $width) (i32.const 2)) (i32.const 3)))
    (local.set $swizzleLo (call $lanesBytes (local.get $width) (v128.const i32x4 0 1 2 3) (i32.const 0)))
    (local.set $swizzleHi (call $lanesBytes (local.get $width) (v128.const i32x4 4 5 6 7) (local.get $hiAt)))
    (local.set $lineLo (call $lanesLineUp (local.get $width) (i32.const 0)))
    (local.set $lineHi (call $lanesLineUp (local.get $width) (i32.const 4)))
    (local.set $widthMask (i32x4.splat (i32.wrap_i64 (local.get $mask))))
    (local.set $largestLanes (i32x4.splat (i32.const -1)))
    (local.set $targetLanes (i32x4.splat (local.get $target)))
    (block $done
      (loop $runs
        (br_if $done (i32.ge_s (local.get $seen) (local.get $count)))
        ;; The run's header, a ULEB128 varint (up to 6 bytes, as the JavaScript reader took).
        (if (i32.ge_u (local.get $at) (local.get $end))
          (then
            (global.set $seen (local.get $seen))
            (return (i32.const 1))))
        (local.set $byte (i32.load8_u (local.get $at)))
        (local.set $at (i32.add (local.get $at) (i32.const 1)))
        (local.set $header (i64.extend_i32_u (i32.and (local.get $byte) (i32.const 0x7f))))
        (if (i32.ge_u (local.get $byte) (i32.const 0x80))
          (then
            (local.set $shift (i64.const 7))
            (block $headerRead
              (loop $headerByte
                (if (i64.gt_u (local.get $shift) (i64.const 35)) (then (return (i32.const 2))))
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
                (br $headerByte)))))
        (if (i64.eqz (i64.and (local.get $header) (i64.const 1)))
          (then
            ;; RLE: one value, repeated, in ceil(width / 8) bytes (one 4-byte load, masked).
            (if (i32.gt_u (i32.add (local.get $at) (local.get $valueBytes)) (local.get $end)) (then (return (i32.const 3))))
            (local.set $v (i32.and (i32.load (local.get $at)) (local.get $valueMask)))
            (local.set $at (i32.add (local.get $at) (local.get $valueBytes)))
            (if (i32.lt_s (local.get $v) (i32.const 0)) (then (return (i32.const 4))))
            ;; stop = min(count, seen + header / 2)
            (local.set $stop (i64.add (i64.extend_i32_u (local.get $seen)) (i64.shr_u (local.get $header) (i64.const 1))))
            (if (i64.gt_u (local.get $stop) (i64.extend_i32_u (local.get $count)))
              (then (local.set $stop (i64.extend_i32_u (local.get $count)))))
            (local.set $n (i32.sub (i32.wrap_i64 (local.get $stop)) (local.get $seen)))
            (if (i32.gt_s (local.get $n) (i32.const 0))
              (then
                (local.set $largest (select (local.get $v) (local.get $largest) (i32.gt_s (local.get $v) (local.get $largest))))
                (local.set $matches (i32.add (local.get $matches) (i32.mul (local.get $n) (i32.eq (local.get $v) (local.get $target)))))
                (local.set $repeat (i32x4.splat (local.get $v)))
                (local.set $p (i32.add (local.get $out) (i32.shl (local.get $seen) (i32.const 2))))
                (local.set $q (i32.add (local.get $out) (i32.shl (i32.wrap_i64 (local.get $stop)) (i32.const 2))))
                ;; Up to 8 repeats (a time column's runs, nearly all) in two stores, no branch on
                ;; their number; more 16 at a time, then 4 at a time: up to 60 bytes past the
                ;; run, written over by the next.
                (v128.store offset=0 (local.get $p) (local.get $repeat))
                (v128.store offset=16 (local.get $p) (local.get $repeat))
                (if (i32.gt_u (local.get $n) (i32.const 8))
                  (then
                (local.set $p (i32.add (local.get $p) (i32.const 32)))
                (block $wide
                  (loop $fill16
                    (br_if $wide (i32.lt_s (i32.sub (local.get $q) (local.get $p)) (i32.const 64)))
                    (v128.store offset=0 (local.get $p) (local.get $repeat))
                    (v128.store offset=16 (local.get $p) (local.get $repeat))
                    (v128.store offset=32 (local.get $p) (local.get $repeat))
                    (v128.store offset=48 (local.get $p) (local.get $repeat))
                    (local.set $p (i32.add (local.get $p) (i32.const 64)))
                    (br $fill16)))
                (loop $fill4
                  (v128.store (local.get $p) (local.get $repeat))
                  (local.set $p (i32.add (local.get $p) (i32.const 16)))
                  (br_if $fill4 (i32.lt_u (local.get $p) (local.get $q))))))))
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
            (local.set $g (local.get $at))
            (if (i32.le_u (local.get $width) (i32.const 25))
              (then
                ;; Whole groups wanted, 8 values at a time; the rest a value at a time below.
                (local.set $full (i32.add (local.get $p) (i32.shl (i32.and (local.get $wanted) (i32.const -8)) (i32.const 2))))
                (block $grouped
                  (loop $group
                    (br_if $grouped (i32.ge_u (local.get $p) (local.get $full)))
                    (local.set $lo
                      (v128.and
                        (i32x4.shr_u
                          (i32x4.mul (i8x16.swizzle (v128.load (local.get $g)) (local.get $swizzleLo)) (local.get $lineLo))
                          (i32.const 7))
                        (local.get $widthMask)))
                    (local.set $hi
                      (v128.and
                        (i32x4.shr_u
                          (i32x4.mul (i8x16.swizzle (v128.load (i32.add (local.get $g) (local.get $hiAt))) (local.get $swizzleHi)) (local.get $lineHi))
                          (i32.const 7))
                        (local.get $widthMask)))
                    (v128.store offset=0 (local.get $p) (local.get $lo))
                    (v128.store offset=16 (local.get $p) (local.get $hi))
                    (local.set $largestLanes (i32x4.max_s (local.get $largestLanes) (i32x4.max_s (local.get $lo) (local.get $hi))))
                    (local.set $matchLanes
                      (i32x4.sub (local.get $matchLanes)
                        (i32x4.add (i32x4.eq (local.get $lo) (local.get $targetLanes)) (i32x4.eq (local.get $hi) (local.get $targetLanes)))))
                    (local.set $g (i32.add (local.get $g) (local.get $width)))
                    (local.set $p (i32.add (local.get $p) (i32.const 32)))
                    (br $group)))))
            ;; A value at a time (widths past 25, and a run's last values short of a group):
            ;; each from the 8 bytes at its first byte; `bit` is its first bit in that byte.
            (local.set $bit (i32.const 0))
            (block $unpacked
              (loop $unpack
                (br_if $unpacked (i32.ge_u (local.get $p) (local.get $q)))
                (local.set $value
                  (i64.and
                    (i64.shr_u (i64.load (local.get $g)) (i64.extend_i32_u (local.get $bit)))
                    (local.get $mask)))
                (if (i64.gt_u (local.get $value) (i64.const 0x7fffffff)) (then (return (i32.const 6))))
                (local.set $v (i32.wrap_i64 (local.get $value)))
                (i32.store (local.get $p) (local.get $v))
                (local.set $largest (select (local.get $v) (local.get $largest) (i32.gt_s (local.get $v) (local.get $largest))))
                (local.set $matches (i32.add (local.get $matches) (i32.eq (local.get $v) (local.get $target))))
                (local.set $bit (i32.add (local.get $bit) (local.get $width)))
                (local.set $g (i32.add (local.get $g) (i32.shr_u (local.get $bit) (i32.const 3))))
                (local.set $bit (i32.and (local.get $bit) (i32.const 7)))
                (local.set $p (i32.add (local.get $p) (i32.const 4)))
                (br $unpack)))
            (local.set $seen (i32.add (local.get $seen) (local.get $wanted)))
            ;; at += min(runBytes, end - at)
            (if (i64.lt_u (local.get $runBytes) (i64.extend_i32_u (i32.sub (local.get $end) (local.get $at))))
              (then (local.set $at (i32.add (local.get $at) (i32.wrap_i64 (local.get $runBytes)))))
              (else (local.set $at (local.get $end))))))
        (br $runs)))
    ;; The SIMD lanes' largest and matches joined to the rest.
    (local.set $largestLanes
      (i32x4.max_s (local.get $largestLanes) (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $largestLanes) (local.get $largestLanes))))
    (local.set $largestLanes
      (i32x4.max_s (local.get $largestLanes) (i8x16.shuffle 4 5 6 7 0 1 2 3 12 13 14 15 8 9 10 11 (local.get $largestLanes) (local.get $largestLanes))))
    (local.set $v (i32x4.extract_lane 0 (local.get $largestLanes)))
    (local.set $largest (select (local.get $v) (local.get $largest) (i32.gt_s (local.get $v) (local.get $largest))))
    (local.set $matches
      (i32.add (local.get $matches)
        (i32.add
          (i32.add (i32x4.extract_lane 0 (local.get $matchLanes)) (i32x4.extract_lane 1 (local.get $matchLanes)))
          (i32.add (i32x4.extract_lane 2 (local.get $matchLanes)) (i32x4.extract_lane 3 (local.get $matchLanes))))))
    (global.set $largest (local.get $largest))
    (global.set $matches (local.get $matches))
    (global.set $seen (local.get $seen))
    (i32.const 0))

  ;; For values `lanes` (k, one a lane) of a group of `width` bits, read from the group's
  ;; byte `from`: the swizzle that gives each lane the 4 bytes from its value's first byte,
  ;; (k * width) / 8 - from, that byte first.
  (func $lanesBytes (param $width i32) (param $lanes v128) (param $from i32) (result v128)
    (i32x4.add
      (i32x4.mul
        (i32x4.sub
          (i32x4.shr_u (i32x4.mul (local.get $lanes) (i32x4.splat (local.get $width))) (i32.const 3))
          (i32x4.splat (local.get $from)))
        (i32x4.splat (i32.const 0x01010101)))
      (v128.const i32x4 0x03020100 0x03020100 0x03020100 0x03020100)))

  ;; For values first..first+3 of a group of `width` bits: each lane's 2^(7 - its value's
  ;; first bit in its first byte), the multiply that puts the value's bits at bit 7.
  (func $lanesLineUp (param $width i32) (param $first i32) (result v128)
    (i32x4.replace_lane 3
      (i32x4.replace_lane 2
        (i32x4.replace_lane 1
          (i32x4.splat (call $lineUp (local.get $width) (local.get $first)))
          (call $lineUp (local.get $width) (i32.add (local.get $first) (i32.const 1))))
        (call $lineUp (local.get $width) (i32.add (local.get $first) (i32.const 2))))
      (call $lineUp (local.get $width) (i32.add (local.get $first) (i32.const 3)))))

  ;; 2^(7 - (k * width) mod 8).
  (func $lineUp (param $width i32) (param $k i32) (result i32)
    (i32.shl (i32.const 1) (i32.sub (i32.const 7) (i32.and (i32.mul (local.get $k) (local.get $width)) (i32.const 7)))))

  ;; Each of the `count` Int32 values at `values` (dictionary indices, each checked below
  ;; the dictionary's length by the caller) replaced by its entry of the Float64 dictionary
  ;; at `dictionary`, into Float64 at `out`: a typed column's dictionary-encoded rows as
  ;; numbers (parquet-columns.ts), without a JavaScript loop over every row.
  (func (export "gather") (param $values i32) (param $count i32) (param $dictionary i32) (param $out i32)
    (local $p i32) (local $q i32) (local $o i32) (local $four v128) (local $last v128) (local $entry v128)
    (local $index i32)
    ;; Four at a time: four indices equal to the last four's last (an RLE run's, nearly
    ;; always: a date column's page is one run) are its entry, stored twice 16 bytes wide.
    (local.set $p (local.get $values))
    (local.set $q (i32.add (local.get $values) (i32.shl (i32.and (local.get $count) (i32.const -4)) (i32.const 2))))
    (local.set $o (local.get $out))
    (local.set $last (i32x4.splat (i32.const -1)))
    (block $done4
      (loop $fours
        (br_if $done4 (i32.ge_u (local.get $p) (local.get $q)))
        (local.set $four (v128.load (local.get $p)))
        (if (i32x4.all_true (i32x4.eq (local.get $four) (local.get $last)))
          (then
            (v128.store offset=0 (local.get $o) (local.get $entry))
            (v128.store offset=16 (local.get $o) (local.get $entry)))
          (else
            (f64.store offset=0 (local.get $o)
              (f64.load (i32.add (local.get $dictionary) (i32.shl (i32x4.extract_lane 0 (local.get $four)) (i32.const 3)))))
            (f64.store offset=8 (local.get $o)
              (f64.load (i32.add (local.get $dictionary) (i32.shl (i32x4.extract_lane 1 (local.get $four)) (i32.const 3)))))
            (f64.store offset=16 (local.get $o)
              (f64.load (i32.add (local.get $dictionary) (i32.shl (i32x4.extract_lane 2 (local.get $four)) (i32.const 3)))))
            (local.set $index (i32x4.extract_lane 3 (local.get $four)))
            (local.set $entry (v128.load64_splat (i32.add (local.get $dictionary) (i32.shl (local.get $index) (i32.const 3)))))
            (f64.store offset=24 (local.get $o) (f64x2.extract_lane 0 (local.get $entry)))
            (local.set $last (i32x4.splat (local.get $index)))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (local.set $o (i32.add (local.get $o) (i32.const 32)))
        (br $fours)))
    (local.set $q (i32.add (local.get $values) (i32.shl (local.get $count) (i32.const 2))))
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $p) (local.get $q)))
        (f64.store (local.get $o)
          (f64.load (i32.add (local.get $dictionary) (i32.shl (i32.load (local.get $p)) (i32.const 3)))))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (local.set $o (i32.add (local.get $o) (i32.const 8)))
        (br $rows))))
)
