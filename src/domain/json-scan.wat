;; The JSON line scanner (see json-scanner.ts): lines of a flat JSON object whose keys
;; are those of a learned template, in its order, with the template's exact glue between
;; the values, become tab-separated lines of the values read, as JsonLines makes them.
;;
;; Memory layout (byte offsets):
;;   0      out: where the output ended (written by convert)
;;   4      status: 0 every line done, 1 the line at the returned position needs the
;;          general reader, 2 the output is full (flush it and call again)
;;   8      n: keys in the template
;;   12     m: slots (values written per line, in slot order)
;;   1024   the template: per key, then once for the closing glue, 16 bytes:
;;          glue offset, glue length, slot (1..m, 0: not read), -
;;          key k's glue is `{"key":"` (k = 0) or `","key":"`; the closing glue `"}`
;;   16384  per slot s (1..m) at 16384 + 8 s: value start, value end (0, 0: none)
;;   20480  the glue bytes (up to 40,960)
;;   65536  the text, then the output (placed by the caller)
(module
  (memory (export "memory") 2)

  ;; 1 when bytes [p, p + len) equal [g, g + len): 16 at a time (both may be read past).
  (func $same (param $p i32) (param $g i32) (param $len i32) (result i32)
    (local $mask i32)
    (block $differ
      (loop $blocks
        (if (i32.ge_u (local.get $len) (i32.const 16))
          (then
            (br_if $differ
              (i32.ne (i8x16.bitmask (i8x16.eq (v128.load (local.get $p)) (v128.load (local.get $g)))) (i32.const 0xffff)))
            (local.set $p (i32.add (local.get $p) (i32.const 16)))
            (local.set $g (i32.add (local.get $g) (i32.const 16)))
            (local.set $len (i32.sub (local.get $len) (i32.const 16)))
            (br $blocks))))
      (local.set $mask (i32.sub (i32.shl (i32.const 1) (local.get $len)) (i32.const 1)))
      (return
        (i32.eq
          (i32.and (i8x16.bitmask (i8x16.eq (v128.load (local.get $p)) (v128.load (local.get $g)))) (local.get $mask))
          (local.get $mask))))
    (i32.const 0))

  ;; convert(pos, end, out, outEnd, maxLine): converts the lines from `pos` (a line start)
  ;; up to `end` (just past a '\n') into the output at `out`, until a line does not fit
  ;; the template (status 1) or the output has no room for the next (status 2). Returns
  ;; the start of the first line not converted; the output's end is at [0].
  (func (export "convert") (param $pos i32) (param $end i32) (param $out i32) (param $outEnd i32) (param $maxLine i32) (result i32)
    (local $lineStart i32) (local $p i32) (local $n i32) (local $m i32) (local $k i32) (local $entry i32)
    (local $s i32) (local $start i32) (local $len i32) (local $bits i32) (local $v v128) (local $status i32) (local $glue i32)
    (local.set $n (i32.load (i32.const 8)))
    (local.set $m (i32.load (i32.const 12)))
    (local.set $lineStart (local.get $pos))
    (block $stop
      (loop $lines
        (br_if $stop (i32.ge_u (local.get $lineStart) (local.get $end)))
        (local.set $status (i32.const 1))
        (local.set $p (local.get $lineStart))
        (local.set $s (i32.const 1))
        (block $clear
          (loop $slots
            (br_if $clear (i32.gt_u (local.get $s) (local.get $m)))
            (i64.store offset=16384 (i32.shl (local.get $s) (i32.const 3)) (i64.const 0))
            (local.set $s (i32.add (local.get $s) (i32.const 1)))
            (br $slots)))
        (local.set $k (i32.const 0))
        (local.set $entry (i32.const 1024))
        (loop $keys
          ;; The glue before value k, as the template has it.
          ;; ($same, written out here: a call per key costs more than the comparison.)
          (local.set $len (i32.load offset=4 (local.get $entry)))
          (local.set $glue (i32.load (local.get $entry)))
          (local.set $start (i32.add (local.get $p) (local.get $len)))
          (block $compared
            (loop $glueBlocks
              (local.set $bits (i8x16.bitmask (i8x16.eq (v128.load (local.get $p)) (v128.load (local.get $glue)))))
              (if (i32.ge_u (local.get $len) (i32.const 16))
                (then
                  (br_if $stop (i32.ne (local.get $bits) (i32.const 0xffff)))
                  (local.set $p (i32.add (local.get $p) (i32.const 16)))
                  (local.set $glue (i32.add (local.get $glue) (i32.const 16)))
                  (local.set $len (i32.sub (local.get $len) (i32.const 16)))
                  (br $glueBlocks)))
              (local.set $len (i32.sub (i32.shl (i32.const 1) (local.get $len)) (i32.const 1)))
              (br_if $stop (i32.ne (i32.and (local.get $bits) (local.get $len)) (local.get $len)))))
          (local.set $p (local.get $start))
          ;; The value ends at the first '"', '\' or control byte (a '\n' among them):
          ;; only a '"' is the end of a value the template reads.
          (block $found
            (loop $blocks
              (local.set $v (v128.load (local.get $p)))
              (local.set $bits
                (i8x16.bitmask
                  (v128.or
                    (v128.or (i8x16.eq (local.get $v) (i8x16.splat (i32.const 34)))
                             (i8x16.eq (local.get $v) (i8x16.splat (i32.const 92))))
                    (i8x16.lt_u (local.get $v) (i8x16.splat (i32.const 32))))))
              (br_if $found (local.get $bits))
              (local.set $p (i32.add (local.get $p) (i32.const 16)))
              (br $blocks)))
          (local.set $p (i32.add (local.get $p) (i32.ctz (local.get $bits))))
          (br_if $stop (i32.ne (i32.load8_u (local.get $p)) (i32.const 34)))
          (local.set $s (i32.load offset=8 (local.get $entry)))
          (if (local.get $s)
            (then
              (i32.store offset=16384 (i32.shl (local.get $s) (i32.const 3)) (local.get $start))
              (i32.store offset=16388 (i32.shl (local.get $s) (i32.const 3)) (local.get $p))))
          (local.set $entry (i32.add (local.get $entry) (i32.const 16)))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br_if $keys (i32.lt_u (local.get $k) (local.get $n))))
        ;; The closing glue, an optional CR, the newline.
        (local.set $len (i32.load offset=4 (local.get $entry)))
        (br_if $stop (i32.eqz (call $same (local.get $p) (i32.load (local.get $entry)) (local.get $len))))
        (local.set $p (i32.add (local.get $p) (local.get $len)))
        (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 13))
          (then (local.set $p (i32.add (local.get $p) (i32.const 1)))))
        (br_if $stop (i32.ne (i32.load8_u (local.get $p)) (i32.const 10)))
        ;; Too long a line is the general reader's to count as malformed.
        (br_if $stop (i32.gt_u (i32.sub (local.get $p) (local.get $lineStart)) (local.get $maxLine)))
        ;; The line's output is at most its own length plus a tab or '-' per slot and a newline.
        (if (i32.gt_u
              (i32.add (local.get $out)
                       (i32.add (i32.sub (local.get $p) (local.get $lineStart)) (i32.add (i32.shl (local.get $m) (i32.const 1)) (i32.const 2))))
              (local.get $outEnd))
          (then
            (local.set $status (i32.const 2))
            (br $stop)))
        (local.set $s (i32.const 1))
        (loop $emit
          (if (i32.gt_u (local.get $s) (i32.const 1))
            (then
              (i32.store8 (local.get $out) (i32.const 9))
              (local.set $out (i32.add (local.get $out) (i32.const 1)))))
          (local.set $start (i32.load offset=16384 (i32.shl (local.get $s) (i32.const 3))))
          (local.set $len (i32.sub (i32.load offset=16388 (i32.shl (local.get $s) (i32.const 3))) (local.get $start)))
          (if (i32.eqz (local.get $len))
            (then
              (i32.store8 (local.get $out) (i32.const 45))
              (local.set $out (i32.add (local.get $out) (i32.const 1))))
            (else
              ;; Values are short: 16 bytes at a time (the output has room past its end).
              (local.set $k (i32.const 0))
              (loop $copy
                (v128.store (i32.add (local.get $out) (local.get $k)) (v128.load (i32.add (local.get $start) (local.get $k))))
                (local.set $k (i32.add (local.get $k) (i32.const 16)))
                (br_if $copy (i32.lt_u (local.get $k) (local.get $len))))
              (local.set $out (i32.add (local.get $out) (local.get $len)))))
          (local.set $s (i32.add (local.get $s) (i32.const 1)))
          (br_if $emit (i32.le_u (local.get $s) (local.get $m))))
        (i32.store8 (local.get $out) (i32.const 10))
        (local.set $out (i32.add (local.get $out) (i32.const 1)))
        (local.set $lineStart (i32.add (local.get $p) (i32.const 1)))
        (local.set $status (i32.const 0))
        (br $lines)))
    (i32.store (i32.const 0) (local.get $out))
    (i32.store (i32.const 4) (local.get $status))
    (local.get $lineStart))
)
