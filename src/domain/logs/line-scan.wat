;; Finds the lines of a CloudFront log and the columns a counter reads, 64 bytes at a
;; time (WebAssembly SIMD, four 16-byte compares per block), and checks the three columns every line needs (date, time,
;; sc-bytes) on the way. The source of src/domain/logs/line-scan-wasm.ts, which
;; `node scripts/build-wasm.mjs` writes; test/unit/line-scanner.test.ts checks the two
;; agree, and line-scanner.ts holds the same logic in JavaScript (scanLinesInJs).
;;
;; Memory, laid out by line-scanner.ts:
;;   [0, 4)         the number of records the last call wrote
;;   [4, 8)         1 when [8, 18) holds the day of the previous good line
;;   [8, 18)        that day's 10 bytes
;;   [24, 28)       the layout's width (fields a line needs); checks run on lines that have them
;;   [28, 40)       the slots of date, time and sc-bytes (0: the layout has no such column)
;;   [40, 52)       the account key: 0 none, 1 the host label, 2 the host; the slots of
;;                  x-host-header and cs(Host) (0: none)
;;   [52, 60)       where the key table is, and how many keys it holds
;;   [60, 64)       where the column table is: per column (Int32) the next column read at
;;                  or after it (bits 8 and up) and, when the column itself is read, its
;;                  slot (bits 0-7; 0 when it is not)
;;   [64, 68)       1 when lines that pass every check and have a known key are summed
;;                  here instead of recorded (no metric rules to run on them)
;;   [68, 72)       1 when scan stops after the record of a line whose date is neither day
;;                  (the caller may make it one of the days before the lines after it)
;;   [72, 76)       1 when malformed lines are counted here, not recorded: lines of 1 to
;;                  [84] bytes, not ending in a CR, that have too few fields or fail the
;;                  time or sc-bytes check (malformed whatever their date; the caller
;;                  turns this on once it needs no more of them as samples)
;;   [76, 80)       how many lines were so counted (the caller reads and clears it)
;;   [80, 84)       how many lines were summed after the last record of the last call
;;   [84, 88)       the longest line (bytes) that may be summed: longer ones are recorded
;;   [88, 92)       1 when [112, 122) holds a second day (a log near midnight has lines of
;;                  two days mixed): lines on it pass check 8 instead of check 1
;;   [92, 96)       where the lines on the second day are summed, as the first day's are at
;;                  [124] (see "A day's sums" below)
;;   [96, 100)      the day of the last line the last call summed after its last record:
;;                  1 the first, 2 the second, 0 none
;;   [100, 108)     the '-' of an empty JSON value, scanJson's status
;;   [108, 112)     where scanJson sums the lines of its parts after the first (3 day's sums
;;                  for the first day, then 3 for the second)
;;   [112, 122)     the second day's 10 bytes
;;   [122, 124)     unused
;;   [124, 128)     where the lines on the first day are summed
;;   [128, 144)     where the quad reader leaves its lines' ends (see readers)
;;   [256, 448)     scanJson's parts (see there)
;;   [1280, 1472)   per part, the hours it summed lines in on the first and the second
;;                  day ([part + 1024], [part + 1028]: see scanJson)
;;   the text, the records and the sums, where the caller says
;;
;; A day's sums (1,179,648 bytes): per UTC hour (24) and key id (4,096), a cell
;; hour * 4096 + key: the lines summed (Int32) at +4 * cell, their sc-bytes (float64) at
;; +393216 + 8 * cell. The hour is the time's first two digits, which $check leaves in
;; $hour (summing needs a time column: the caller sees to it). Hour-major, so that
;; scanJson's parts clear and add only the hours they summed lines in.
;;
;; A record (stride bytes) per line:
;;   +0 line start, +4 line end (its '\n'), +8 number of fields (tabs + 1),
;;   +12 checks: 1 the date is the previous good line's day, 2 the time is HH:MM:SS (or
;;       there is no time column), 4 sc-bytes is a count (or there is none), 8 the date
;;       is the second day's (and not the first's); only for lines with at least `width`
;;       fields, else 0,
;;   +16 sc-bytes as a float64 (when check 4 passed),
;;   +24 the account key's id in the key table; -1 a key not in the table yet (+28 and
;;       +32 say where it is), -2 no key (the caller resolves the line itself), -3 no
;;       host at all, -4 an IP-literal host or a CloudFront default domain not in the
;;       table yet (+28 and +32 say where it is: the whole host is its key); only for
;;       lines with at least `width` fields,
;;   +36 how many lines were summed (not recorded) since the previous record,
;;   +32 + 8 * slot, +36 + 8 * slot: start and end of the slot's column (only written
;;       when the line has that column; slots start at 1).
(module
  (memory (export "memory") 1)

  ;; The readers of one JSON template's values (see scanJson): the functions of a module
  ;; written for the template (json-reader-wasm.ts), put here by line-scanner.ts.
  ;; quad(line0, rec0, ..., line3, rec3): reads the values of four lines into their
  ;; records and checks that each then closes (`"}`, a CR or not, '\n'), leaving each
  ;; line's '\n' at [128 + 4 * i] and answering 0, or -1 when a line does not fit.
  ;; line(lineStart, rec): the values of one line, answering where its last value ends,
  ;; or -1.
  (type $quadReader (func (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32)))
  (type $lineReader (func (param i32 i32) (result i32)))
  (table (export "readers") 2 funcref)

  ;; The UTC hour (0..23) of the line $check last found a good time in.
  (global $hour (mut i32) (i32.const 0))

  ;; scan(pos, end, rec, recEnd, lastNeeded, stride) -> where the next line starts.
  ;; `pos` starts a line and the byte before `end` is '\n'; 31 bytes past `end` must be
  ;; readable. Stops at `end`, before a line starting with '#' (a directive: the caller
  ;; reads it and may change the columns), or when the next record would pass `recEnd`.
  ;; Past column `lastNeeded` the tabs of a line are only counted.
  (func (export "scan")
    (param $pos i32) (param $end i32) (param $rec i32) (param $recEnd i32) (param $lastNeeded i32) (param $stride i32)
    (result i32)
    (local $base i32) (local $tabs i64) (local $nls i64) (local $bits i64) (local $i i32) (local $p i32)
    (local $col i32) (local $fieldStart i32) (local $lineStart i32) (local $slot i32) (local $written i32)
    (local $width i32) (local $table i32) (local $entry i32) (local $skip i32) (local $checks i32) (local $key i32) (local $summed i32)
    (local $second i32) (local $sums i32) (local $lastDay i32) (local $newDay i32) (local $length i32)
    (local $block v128) (local $high v128) (local $low32 i32) (local $high32 i32)
    (local.set $width (i32.load (i32.const 24)))
    (local.set $table (i32.load (i32.const 60)))
    (local.set $lineStart (local.get $pos))
    (local.set $fieldStart (local.get $pos))
    (local.set $base (local.get $pos))
    (i32.store (i32.const 0) (i32.const 0))
    (i32.store (i32.const 80) (i32.const 0))
    (i32.store (i32.const 96) (i32.const 0))
    (if (i32.or
          (i32.or (i32.ge_u (local.get $lineStart) (local.get $end))
                  (i32.eq (i32.load8_u (local.get $lineStart)) (i32.const 35)))
          (i32.gt_u (i32.add (local.get $rec) (local.get $stride)) (local.get $recEnd)))
      (then (return (local.get $lineStart))))
    (loop $blocks
      ;; 64 bytes a block, four 16-byte quarters: a quarter of the trips round the block
      ;; loop that 16 bytes took, with masks of an i64.
      (local.set $block (v128.load (local.get $base)))
      (local.set $high (v128.load offset=16 (local.get $base)))
      (local.set $low32 (i32.or
        (i8x16.bitmask (i8x16.eq (local.get $block) (v128.const i8x16 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9)))
        (i32.shl (i8x16.bitmask (i8x16.eq (local.get $high) (v128.const i8x16 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9))) (i32.const 16))))
      (local.set $nls (i64.extend_i32_u (i32.or
        (i8x16.bitmask (i8x16.eq (local.get $block) (v128.const i8x16 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10)))
        (i32.shl (i8x16.bitmask (i8x16.eq (local.get $high) (v128.const i8x16 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10))) (i32.const 16)))))
      (local.set $block (v128.load offset=32 (local.get $base)))
      (local.set $high (v128.load offset=48 (local.get $base)))
      (local.set $high32 (i32.or
        (i8x16.bitmask (i8x16.eq (local.get $block) (v128.const i8x16 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9)))
        (i32.shl (i8x16.bitmask (i8x16.eq (local.get $high) (v128.const i8x16 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9))) (i32.const 16))))
      (local.set $tabs (i64.or (i64.extend_i32_u (local.get $low32)) (i64.shl (i64.extend_i32_u (local.get $high32)) (i64.const 32))))
      (local.set $nls (i64.or (local.get $nls) (i64.shl (i64.extend_i32_u (i32.or
        (i8x16.bitmask (i8x16.eq (local.get $block) (v128.const i8x16 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10)))
        (i32.shl (i8x16.bitmask (i8x16.eq (local.get $high) (v128.const i8x16 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10))) (i32.const 16)))) (i64.const 32))))
      (loop $separators
        (if (i32.gt_s (local.get $col) (local.get $lastNeeded))
          (then
            ;; Every column read is found: count the tabs up to the line's end.
            (if (i64.eqz (local.get $nls))
              (then
                (local.set $col (i32.add (local.get $col) (i32.wrap_i64 (i64.popcnt (local.get $tabs)))))
                (local.set $base (i32.add (local.get $base) (i32.const 64)))
                (br $blocks)))
            (local.set $i (i32.wrap_i64 (i64.ctz (local.get $nls))))
            (local.set $col (i32.add (local.get $col)
              (i32.wrap_i64 (i64.popcnt (i64.and (local.get $tabs) (i64.sub (i64.shl (i64.const 1) (i64.extend_i32_u (local.get $i))) (i64.const 1)))))))
            (local.set $p (i32.add (local.get $base) (local.get $i)))
            (local.set $tabs (i64.and (local.get $tabs) (i64.xor (i64.sub (i64.shl (i64.const 2) (i64.extend_i32_u (local.get $i))) (i64.const 1)) (i64.const -1))))
            (local.set $nls (i64.and (local.get $nls) (i64.sub (local.get $nls) (i64.const 1)))))
          (else
            (local.set $entry (i32.load (i32.add (local.get $table) (i32.shl (local.get $col) (i32.const 2)))))
            (local.set $skip (i32.sub (i32.shr_u (local.get $entry) (i32.const 8)) (local.get $col)))
            (if (local.get $skip)
              (then
                ;; Column $col is not read: pass $skip tabs, to the next column that is.
                (local.set $bits (local.get $tabs))
                (if (i64.ne (local.get $nls) (i64.const 0))
                  (then (local.set $bits (i64.and (local.get $tabs)
                    (i64.sub (i64.shl (i64.const 1) (i64.ctz (local.get $nls))) (i64.const 1))))))
                (local.set $i (i32.wrap_i64 (i64.popcnt (local.get $bits))))
                (if (i32.lt_u (local.get $i) (local.get $skip))
                  (then
                    (local.set $col (i32.add (local.get $col) (local.get $i)))
                    (if (i64.eqz (local.get $nls))
                      (then
                        (local.set $base (i32.add (local.get $base) (i32.const 64)))
                        (br $blocks)))
                    ;; The line ends first, short of the column.
                    (local.set $i (i32.wrap_i64 (i64.ctz (local.get $nls))))
                    (local.set $p (i32.add (local.get $base) (local.get $i)))
                    (local.set $tabs (i64.and (local.get $tabs) (i64.xor (i64.sub (i64.shl (i64.const 2) (i64.extend_i32_u (local.get $i))) (i64.const 1)) (i64.const -1))))
                    (local.set $nls (i64.and (local.get $nls) (i64.sub (local.get $nls) (i64.const 1)))))
                  (else
                    (loop $pass
                      (local.set $i (i32.wrap_i64 (i64.ctz (local.get $tabs))))
                      (local.set $tabs (i64.and (local.get $tabs) (i64.sub (local.get $tabs) (i64.const 1))))
                      (local.set $skip (i32.sub (local.get $skip) (i32.const 1)))
                      (br_if $pass (local.get $skip)))
                    (local.set $col (i32.shr_u (local.get $entry) (i32.const 8)))
                    (local.set $fieldStart (i32.add (i32.add (local.get $base) (local.get $i)) (i32.const 1)))
                    (br $separators))))
              (else
                ;; The next tab or newline ends column $col, which is read: record it.
                (local.set $bits (i64.or (local.get $tabs) (local.get $nls)))
                (if (i64.eqz (local.get $bits))
                  (then
                    (local.set $base (i32.add (local.get $base) (i32.const 64)))
                    (br $blocks)))
                (local.set $i (i32.wrap_i64 (i64.ctz (local.get $bits))))
                (local.set $p (i32.add (local.get $base) (local.get $i)))
                (local.set $slot (i32.shl (i32.and (local.get $entry) (i32.const 255)) (i32.const 3)))
                (i32.store offset=32 (i32.add (local.get $rec) (local.get $slot)) (local.get $fieldStart))
                (i32.store offset=36 (i32.add (local.get $rec) (local.get $slot)) (local.get $p))
                (if (i64.ne (i64.and (local.get $tabs) (i64.shl (i64.const 1) (i64.extend_i32_u (local.get $i)))) (i64.const 0))
                  (then
                    (local.set $tabs (i64.and (local.get $tabs) (i64.sub (local.get $tabs) (i64.const 1))))
                    (local.set $col (i32.add (local.get $col) (i32.const 1)))
                    (local.set $fieldStart (i32.add (local.get $p) (i32.const 1)))
                    (br $separators)))
                (local.set $nls (i64.and (local.get $nls) (i64.sub (local.get $nls) (i64.const 1))))))))
        ;; The line ends at $p.
        (local.set $checks
          (if (result i32) (i32.ge_s (i32.add (local.get $col) (i32.const 1)) (local.get $width))
            (then (call $check (local.get $rec) (local.get $p)))
            (else (i32.const 0))))
        (local.set $key (i32.load offset=24 (local.get $rec)))
        (local.set $second (i32.eq (local.get $checks) (i32.const 14)))
        ;; A line with every column on neither day (a line summed is on one of them).
        (local.set $newDay (i32.and (i32.ge_s (i32.add (local.get $col) (i32.const 1)) (local.get $width))
                                    (i32.eqz (i32.and (local.get $checks) (i32.const 9)))))
        (local.set $length (i32.sub (local.get $p) (local.get $lineStart)))
        (if (i32.and
              (i32.and (i32.load (i32.const 64)) (i32.or (i32.eq (local.get $checks) (i32.const 7)) (local.get $second)))
              (i32.and (i32.ge_s (local.get $key) (i32.const 0))
                       (i32.le_u (local.get $length) (i32.load (i32.const 84)))))
          (then
            ;; A line of a known key on either day, with a good time and byte count:
            ;; summed here (in its day's sums, in the cell of its key and hour), not recorded.
            (local.set $key (i32.shl (i32.add (i32.shl (global.get $hour) (i32.const 12)) (local.get $key)) (i32.const 2)))
            (local.set $sums (i32.add (i32.load (select (i32.const 92) (i32.const 124) (local.get $second))) (local.get $key)))
            (i32.store (local.get $sums) (i32.add (i32.load (local.get $sums)) (i32.const 1)))
            (local.set $sums (i32.add (local.get $sums) (local.get $key)))
            (f64.store offset=393216 (local.get $sums)
              (f64.add (f64.load offset=393216 (local.get $sums)) (f64.load offset=16 (local.get $rec))))
            (local.set $lastDay (i32.add (local.get $second) (i32.const 1)))
            (local.set $summed (i32.add (local.get $summed) (i32.const 1))))
          (else (if (i32.and
                (i32.and (i32.load (i32.const 72)) (i32.ne (i32.and (local.get $checks) (i32.const 6)) (i32.const 6)))
                (i32.and (i32.and (i32.ne (local.get $length) (i32.const 0)) (i32.le_u (local.get $length) (i32.load (i32.const 84))))
                         (i32.ne (i32.load8_u (i32.sub (local.get $p) (i32.const 1))) (i32.const 13))))
          (then
            ;; Malformed (too few fields, or a bad time or byte count), and no longer
            ;; needed as a sample: counted here, not recorded.
            (i32.store (i32.const 76) (i32.add (i32.load (i32.const 76)) (i32.const 1)))
            (local.set $newDay (i32.const 0))
            (local.set $summed (i32.add (local.get $summed) (i32.const 1))))
          (else
            (i32.store (local.get $rec) (local.get $lineStart))
            (i32.store offset=4 (local.get $rec) (local.get $p))
            (i32.store offset=8 (local.get $rec) (i32.add (local.get $col) (i32.const 1)))
            (i32.store offset=12 (local.get $rec) (local.get $checks))
            (i32.store offset=36 (local.get $rec) (local.get $summed))
            (local.set $summed (i32.const 0))
            (local.set $lastDay (i32.const 0))
            (local.set $rec (i32.add (local.get $rec) (local.get $stride)))
            (local.set $written (i32.add (local.get $written) (i32.const 1)))))))
        (local.set $lineStart (i32.add (local.get $p) (i32.const 1)))
        (local.set $fieldStart (local.get $lineStart))
        (local.set $col (i32.const 0))
        (if (i32.or
              (i32.or
                (i32.or (i32.ge_u (local.get $lineStart) (local.get $end))
                        (i32.eq (i32.load8_u (local.get $lineStart)) (i32.const 35)))
                (i32.gt_u (i32.add (local.get $rec) (local.get $stride)) (local.get $recEnd)))
              ;; a line of a new day, when asked to stop at one
              (i32.and (i32.load (i32.const 68)) (local.get $newDay)))
          (then
            (i32.store (i32.const 0) (local.get $written))
            (i32.store (i32.const 80) (local.get $summed))
            (i32.store (i32.const 96) (local.get $lastDay))
            (return (local.get $lineStart))))
        (br $separators)))
    (unreachable))

;; scanJson(pos, end, rec, recEnd, stride, maxLine) -> where the next line starts.
  ;; Lines of JSON (see json-scanner.ts) that are the template's flat object: its keys,
  ;; in its order, with exactly its bytes between the values, and no '"', '\' or control
  ;; byte in a value. Each such line gets the record a tab-separated line of the values
  ;; read would get (its slots point at the values in the JSON text; an empty value at a
  ;; '-' kept at [100]), checked, keyed and summed as scan does. Stops at `end`, at a
  ;; line that does not fit or is longer than `maxLine` bytes ([104] = 1, the line at the
  ;; returned position is the caller's), when the records are full ([104] = 2), or, with
  ;; [104] = 0, at a line start before `end` (the caller calls again from there).
  ;; The values are read by the template's readers (the table above; key k's glue is
  ;; `{"key":"` for k = 0, else `","key":"`); the closing glue `"}` is checked here.
  ;;
  ;; Reading one value is a chain: where it ends decides where the next glue starts.
  ;; With the lines summed here (no metric rules), the text is cut in four parts at line
  ;; starts and a line of each part is read at once, value by value (the `quad` reader),
  ;; so that the processor follows four chains instead of waiting on one. Each part has
  ;; its own quarter of the records and, but the first, its own sums ([108]); its state
  ;; is kept at [256 + 48 * part]: +0 the next line, +4 its end, +8 the next record,
  ;; +12 the records' end, +16 records written, +20 lines summed since the last record,
  ;; +24 and +28 where its lines and bytes on the first day are summed, +32 its first
  ;; record, +36 why it stopped, +40 and +44 where its lines and bytes on the second day
  ;; are summed. When a part runs out, each is read to its end alone, in order; a part that
  ;; stops early keeps what it read, and the parts after it are dropped, to be read again
  ;; by a later call. The parts kept are then made one run: records in the order of the
  ;; lines, sums added.
  (func (export "scanJson")
    (param $pos i32) (param $end i32) (param $rec i32) (param $recEnd i32) (param $stride i32) (param $maxLine i32)
    (result i32)
    (local $parts i32) (local $part i32) (local $i i32) (local $n i32) (local $at i32)
    (local $line i32) (local $p i32) (local $r i32) (local $quarter i32) (local $sums i32)
    (local $written i32) (local $summed i32) (local $length i32)
    ;; Four parts when lines are summed here and the text is not small, else one.
    (local.set $parts (i32.const 1))
    (if (i32.and (i32.load (i32.const 64)) (i32.ge_u (i32.sub (local.get $end) (local.get $pos)) (i32.const 4096)))
      (then (local.set $parts (i32.const 4))))
    (local.set $quarter (i32.mul (local.get $stride)
      (i32.div_u (i32.div_u (i32.sub (local.get $recEnd) (local.get $rec)) (local.get $parts)) (local.get $stride))))
    (local.set $n (i32.load (i32.const 56)))
    (local.set $i (i32.const 0))
    (loop $setup
      (local.set $part (i32.add (i32.const 256) (i32.mul (local.get $i) (i32.const 48))))
      ;; Part i starts at the first line start at or after its share of the text.
      (local.set $at (i32.add (local.get $pos)
        (i32.wrap_i64 (i64.div_u (i64.mul (i64.extend_i32_u (i32.sub (local.get $end) (local.get $pos))) (i64.extend_i32_u (local.get $i)))
                                 (i64.extend_i32_u (local.get $parts))))))
      (block $found
        (loop $newline
          (br_if $found (i32.or (i32.eq (local.get $at) (local.get $pos)) (i32.ge_u (local.get $at) (local.get $end))))
          (br_if $found (i32.eq (i32.load8_u (i32.sub (local.get $at) (i32.const 1))) (i32.const 10)))
          (local.set $at (i32.add (local.get $at) (i32.const 1)))
          (br $newline)))
      (i32.store (local.get $part) (select (local.get $end) (local.get $at) (i32.ge_u (local.get $at) (local.get $end))))
      (if (local.get $i) (then (i32.store offset=4 (i32.sub (local.get $part) (i32.const 48)) (i32.load (local.get $part)))))
      (i32.store offset=8 (local.get $part) (i32.add (local.get $rec) (i32.mul (local.get $i) (local.get $quarter))))
      (i32.store offset=12 (local.get $part) (i32.add (local.get $rec) (i32.mul (i32.add (local.get $i) (i32.const 1)) (local.get $quarter))))
      (i32.store offset=16 (local.get $part) (i32.const 0))
      (i32.store offset=20 (local.get $part) (i32.const 0))
      (i32.store offset=32 (local.get $part) (i32.load offset=8 (local.get $part)))
      (i32.store offset=36 (local.get $part) (i32.const 0))
      (if (local.get $i)
        (then
          ;; Parts after the first sum apart, at [108], a day's sums each and day: the
          ;; first day's sums of parts 1 to 3, then the second day's. None is cleared
          ;; here: a part clears an hour's cells of the keys known when it first sums a
          ;; line in that hour, and says so in its hours summed, a mask of 24 bits per
          ;; day at [part + 1024] (first day) and [part + 1028] (second), which the join
          ;; adds (see $jsonLine, $addSums).
          (local.set $sums (i32.add (i32.load (i32.const 108)) (i32.mul (i32.sub (local.get $i) (i32.const 1)) (i32.const 1179648))))
          (i32.store offset=24 (local.get $part) (local.get $sums))
          (i32.store offset=28 (local.get $part) (i32.add (local.get $sums) (i32.const 393216)))
          (local.set $sums (i32.add (local.get $sums) (i32.const 3538944)))
          (i32.store offset=40 (local.get $part) (local.get $sums))
          (i32.store offset=44 (local.get $part) (i32.add (local.get $sums) (i32.const 393216)))
          (i32.store offset=1024 (local.get $part) (i32.const 0))
          (i32.store offset=1028 (local.get $part) (i32.const 0)))
        (else
          ;; The first part sums in the days' own sums: every hour is as good as cleared.
          (i32.store offset=1024 (local.get $part) (i32.const -1))
          (i32.store offset=1028 (local.get $part) (i32.const -1))
          (i32.store offset=24 (local.get $part) (i32.load (i32.const 124)))
          (i32.store offset=28 (local.get $part) (i32.add (i32.load (i32.const 124)) (i32.const 393216)))
          (i32.store offset=40 (local.get $part) (i32.load (i32.const 92)))
          (i32.store offset=44 (local.get $part) (i32.add (i32.load (i32.const 92)) (i32.const 393216)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $setup (i32.lt_u (local.get $i) (local.get $parts))))
    ;; The last part ends at `end`; the first's records end where the second's start.
    (i32.store offset=4 (i32.add (i32.const 208) (i32.mul (local.get $parts) (i32.const 48))) (local.get $end))
    (if (i32.eq (local.get $parts) (i32.const 1)) (then (i32.store (i32.const 268) (local.get $recEnd))))
    (if (i32.eq (local.get $parts) (i32.const 4))
      (then
        (block $apart
          (loop $quads
            ;; Every part has a line to read and room for its record.
            (local.set $i (i32.const 0))
            (loop $room
              (local.set $part (i32.add (i32.const 256) (i32.mul (local.get $i) (i32.const 48))))
              (br_if $apart (i32.ge_u (i32.load (local.get $part)) (i32.load offset=4 (local.get $part))))
              (br_if $apart (i32.gt_u (i32.add (i32.load offset=8 (local.get $part)) (local.get $stride)) (i32.load offset=12 (local.get $part))))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $room (i32.lt_u (local.get $i) (i32.const 4))))
            ;; The values of a line of each part, and its close; each line's '\n' at [128 + 4 * part].
            (br_if $apart (i32.lt_s
              (call_indirect (type $quadReader)
                (i32.load (i32.const 256)) (i32.load (i32.const 264)) (i32.load (i32.const 304)) (i32.load (i32.const 312))
                (i32.load (i32.const 352)) (i32.load (i32.const 360)) (i32.load (i32.const 400)) (i32.load (i32.const 408))
                (i32.const 0))
              (i32.const 0)))
            ;; Each line checked, keyed and summed or recorded in its part.
            (local.set $i (i32.const 0))
            (loop $close
              (local.set $part (i32.add (i32.const 256) (i32.mul (local.get $i) (i32.const 48))))
              (local.set $line (i32.load (local.get $part)))
              (local.set $p (i32.load offset=128 (i32.shl (local.get $i) (i32.const 2))))
              (br_if $apart (i32.gt_u (i32.sub (local.get $p) (local.get $line)) (local.get $maxLine)))
              (call $partLine (local.get $part) (local.get $line) (local.get $p) (local.get $stride))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $close (i32.lt_u (local.get $i) (i32.const 4))))
            (br $quads)))))
    ;; Each part to its end alone, in order, until one stops early.
    (local.set $i (i32.const 0))
    (block $stopped
      (loop $finish
        (local.set $part (i32.add (i32.const 256) (i32.mul (local.get $i) (i32.const 48))))
        (br_if $stopped (call $partLines (local.get $part) (local.get $stride) (local.get $maxLine)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br_if $finish (i32.lt_u (local.get $i) (local.get $parts)))
        ;; Every part read to its end.
        (local.set $i (i32.sub (local.get $parts) (i32.const 1)))))
    ;; Parts 0 to $i are kept: their records made one run after the first's, in order (the
    ;; first record of a part counting the lines summed at the end of the part before), and
    ;; their sums added to the first's.
    (local.set $r (i32.load (i32.const 264)))
    (local.set $written (i32.load (i32.const 272)))
    (local.set $summed (i32.load (i32.const 276)))
    (local.set $part (i32.const 256))
    (block $joined
      (loop $join
        (br_if $joined (i32.ge_u (local.get $part) (i32.add (i32.const 256) (i32.mul (local.get $i) (i32.const 48)))))
        (local.set $part (i32.add (local.get $part) (i32.const 48)))
        (local.set $length (i32.sub (i32.load offset=8 (local.get $part)) (i32.load offset=32 (local.get $part))))
        (if (local.get $length)
          (then
            (i32.store offset=36 (i32.load offset=32 (local.get $part))
              (i32.add (i32.load offset=36 (i32.load offset=32 (local.get $part))) (local.get $summed)))
            (memory.copy (local.get $r) (i32.load offset=32 (local.get $part)) (local.get $length))
            (local.set $r (i32.add (local.get $r) (local.get $length)))
            (local.set $summed (i32.load offset=20 (local.get $part))))
          (else (local.set $summed (i32.add (local.get $summed) (i32.load offset=20 (local.get $part))))))
        (local.set $written (i32.add (local.get $written) (i32.load offset=16 (local.get $part))))
        (call $addSums (i32.load (i32.const 124)) (i32.load offset=24 (local.get $part)) (local.get $n) (i32.load offset=1024 (local.get $part)))
        (call $addSums (i32.load (i32.const 92)) (i32.load offset=40 (local.get $part)) (local.get $n) (i32.load offset=1028 (local.get $part)))
        (br $join)))
    (local.set $part (i32.add (i32.const 256) (i32.mul (local.get $i) (i32.const 48))))
    (i32.store (i32.const 0) (local.get $written))
    (i32.store (i32.const 80) (local.get $summed))
    ;; Lines after the last record were summed: said to be on the first day, which may be
    ;; wrong (the parts do not keep the day of their last line), and costs only a slot
    ;; choice, never a count.
    (i32.store (i32.const 96) (i32.ne (local.get $summed) (i32.const 0)))
    (i32.store (i32.const 104) (i32.load offset=36 (local.get $part)))
    (i32.load (local.get $part)))

  ;; Adds the sums of keys 0 to $n - 1 at $from (a day's sums), in the hours of $mask
  ;; (bit h: hour h), to the day's sums at $base ([124] for the first day, [92] the second).
  (func $addSums (param $base i32) (param $from i32) (param $n i32) (param $mask i32)
    (local $hour i32) (local $at i32) (local $end i32)
    (loop $hours
      (if (i32.and (local.get $mask) (i32.shl (i32.const 1) (local.get $hour)))
        (then
          ;; the hour's cells, hour * 4096 + key
          (local.set $at (i32.shl (local.get $hour) (i32.const 12)))
          (local.set $end (i32.add (local.get $at) (local.get $n)))
          (block $added
            (loop $add
              (br_if $added (i32.ge_u (local.get $at) (local.get $end)))
              (i32.store (i32.add (local.get $base) (i32.shl (local.get $at) (i32.const 2)))
                (i32.add (i32.load (i32.add (local.get $base) (i32.shl (local.get $at) (i32.const 2))))
                         (i32.load (i32.add (local.get $from) (i32.shl (local.get $at) (i32.const 2))))))
              (f64.store offset=393216 (i32.add (local.get $base) (i32.shl (local.get $at) (i32.const 3)))
                (f64.add (f64.load offset=393216 (i32.add (local.get $base) (i32.shl (local.get $at) (i32.const 3))))
                         (f64.load offset=393216 (i32.add (local.get $from) (i32.shl (local.get $at) (i32.const 3))))))
              (local.set $at (i32.add (local.get $at) (i32.const 1)))
              (br $add)))))
      (local.set $hour (i32.add (local.get $hour) (i32.const 1)))
      (br_if $hours (i32.lt_u (local.get $hour) (i32.const 24)))))

  ;; A line of a part that fits, [$line, $newline): checked, keyed, and summed in the
  ;; part's sums of its day or given the part's next record (see scanJson).
  (func $partLine (param $part i32) (param $line i32) (param $newline i32) (param $stride i32)
    (local $rec i32)
    (local.set $rec (i32.load offset=8 (local.get $part)))
    (if (call $jsonLine (local.get $line) (local.get $newline) (local.get $rec) (local.get $part))
      (then
        (i32.store offset=36 (local.get $rec) (i32.load offset=20 (local.get $part)))
        (i32.store offset=20 (local.get $part) (i32.const 0))
        (i32.store offset=8 (local.get $part) (i32.add (local.get $rec) (local.get $stride)))
        (i32.store offset=16 (local.get $part) (i32.add (i32.load offset=16 (local.get $part)) (i32.const 1))))
      (else (i32.store offset=20 (local.get $part) (i32.add (i32.load offset=20 (local.get $part)) (i32.const 1)))))
    (i32.store (local.get $part) (i32.add (local.get $newline) (i32.const 1))))

  ;; The lines of a part read one at a time, from its next line to its end (see scanJson);
  ;; answers, and leaves at +36, why it stopped: 0 at its end, 1 at a line that does not
  ;; fit (the part's next line), 2 with its records full.
  (func $partLines (param $part i32) (param $stride i32) (param $maxLine i32) (result i32)
    (local $line i32) (local $p i32) (local $status i32)
    (block $stop
      (loop $lines
        (local.set $line (i32.load (local.get $part)))
        (local.set $status (i32.const 0))
        (br_if $stop (i32.ge_u (local.get $line) (i32.load offset=4 (local.get $part))))
        (local.set $status (i32.const 2))
        (br_if $stop (i32.gt_u (i32.add (i32.load offset=8 (local.get $part)) (local.get $stride)) (i32.load offset=12 (local.get $part))))
        (local.set $status (i32.const 1))
        (local.set $p (call_indirect (type $lineReader) (local.get $line) (i32.load offset=8 (local.get $part)) (i32.const 1)))
        (local.set $p (call $jsonClose (local.get $line) (local.get $p) (local.get $maxLine)))
        (br_if $stop (i32.lt_s (local.get $p) (i32.const 0)))
        (call $partLine (local.get $part) (local.get $line) (local.get $p) (local.get $stride))
        (br $lines)))
    (i32.store offset=36 (local.get $part) (local.get $status))
    (local.get $status))

  ;; Past a byte the search on the way stopped at that is no '"': where the value ends
  ;; (its '"'), or -1 when a '\' or a control byte comes first. The search on the way
  ;; compares signed, one instruction where unsigned takes three, and so also stops at
  ;; every byte of 128 or more (UTF-8), which this exact test passes over.
  (func $valueEnd (export "valueEnd") (param $p i32) (result i32)
    (local $v v128) (local $bits i32)
    (loop $blocks
      (local.set $v (v128.load (local.get $p)))
      (local.set $bits (i8x16.bitmask (v128.or (v128.or (i8x16.eq (local.get $v) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34)) (i8x16.eq (local.get $v) (v128.const i8x16 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92)))
                                       (i8x16.lt_u (local.get $v) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32)))))
      (if (i32.eqz (local.get $bits))
        (then
          (local.set $p (i32.add (local.get $p) (i32.const 16)))
          (br $blocks))))
    (local.set $p (i32.add (local.get $p) (i32.ctz (local.get $bits))))
    (if (result i32) (i32.eq (i32.load8_u (local.get $p)) (i32.const 34))
      (then (local.get $p))
      (else (i32.const -1))))

  ;; After the last value's closing quote at $p: the closing glue, an optional CR, the
  ;; newline; answers the newline, or -1 when the line does not end so or is too long.
  (func $jsonClose (param $lineStart i32) (param $p i32) (param $maxLine i32) (result i32)
    (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
    (if (i32.ne (i32.load16_u (local.get $p)) (i32.const 0x7d22)) (then (return (i32.const -1))))
    (local.set $p (i32.add (local.get $p) (i32.const 2)))
    (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 13))
      (then (local.set $p (i32.add (local.get $p) (i32.const 1)))))
    (if (i32.ne (i32.load8_u (local.get $p)) (i32.const 10)) (then (return (i32.const -1))))
    (if (i32.gt_u (i32.sub (local.get $p) (local.get $lineStart)) (local.get $maxLine)) (then (return (i32.const -1))))
    (local.get $p))

  ;; A line that fits, [$lineStart, $newline): checked, keyed and summed (in the sums of
  ;; part $part on its day) as scan does, answering 0, or given its record at $rec, answering 1.
  (func $jsonLine (param $lineStart i32) (param $newline i32) (param $rec i32) (param $part i32) (result i32)
    (local $checks i32) (local $key i32) (local $second i32) (local $linesAt i32) (local $bytesAt i32) (local $maskAt i32) (local $bit i32)
    (local.set $checks (call $check (local.get $rec) (local.get $newline)))
    (local.set $key (i32.load offset=24 (local.get $rec)))
    (local.set $second (i32.eq (local.get $checks) (i32.const 14)))
    (if (i32.and
          (i32.and (i32.load (i32.const 64)) (i32.or (i32.eq (local.get $checks) (i32.const 7)) (local.get $second)))
          (i32.and (i32.ge_s (local.get $key) (i32.const 0))
                   (i32.le_u (i32.sub (local.get $newline) (local.get $lineStart)) (i32.load (i32.const 84)))))
      (then
        ;; the part's sums of the line's day, in the cell of its hour and key; the
        ;; hour's cells cleared first when the part has summed nothing in it yet
        (local.set $linesAt (i32.load (i32.add (local.get $part) (select (i32.const 40) (i32.const 24) (local.get $second)))))
        (local.set $bytesAt (i32.load (i32.add (local.get $part) (select (i32.const 44) (i32.const 28) (local.get $second)))))
        (local.set $maskAt (i32.add (local.get $part) (select (i32.const 1028) (i32.const 1024) (local.get $second))))
        (local.set $bit (i32.shl (i32.const 1) (global.get $hour)))
        (if (i32.eqz (i32.and (i32.load (local.get $maskAt)) (local.get $bit)))
          (then
            (memory.fill (i32.add (local.get $linesAt) (i32.shl (global.get $hour) (i32.const 14))) (i32.const 0) (i32.shl (i32.load (i32.const 56)) (i32.const 2)))
            (memory.fill (i32.add (local.get $bytesAt) (i32.shl (global.get $hour) (i32.const 15))) (i32.const 0) (i32.shl (i32.load (i32.const 56)) (i32.const 3)))
            (i32.store (local.get $maskAt) (i32.or (i32.load (local.get $maskAt)) (local.get $bit)))))
        (local.set $key (i32.add (i32.shl (global.get $hour) (i32.const 12)) (local.get $key)))
        (i32.store (i32.add (local.get $linesAt) (i32.shl (local.get $key) (i32.const 2)))
          (i32.add (i32.load (i32.add (local.get $linesAt) (i32.shl (local.get $key) (i32.const 2)))) (i32.const 1)))
        (f64.store (i32.add (local.get $bytesAt) (i32.shl (local.get $key) (i32.const 3)))
          (f64.add (f64.load (i32.add (local.get $bytesAt) (i32.shl (local.get $key) (i32.const 3)))) (f64.load offset=16 (local.get $rec))))
        (return (i32.const 0))))
    (i32.store (local.get $rec) (local.get $lineStart))
    (i32.store offset=4 (local.get $rec) (local.get $newline))
    (i32.store offset=8 (local.get $rec) (i32.load (i32.const 24)))
    (i32.store offset=12 (local.get $rec) (local.get $checks))
    (i32.const 1))

  ;; The checks of a line with every column (see +12 above); stores sc-bytes at +16 and
  ;; the account key at +24. One call per line: what it needs is written out here, not
  ;; called (V8 does not inline WebAssembly functions).
  (func $check (param $rec i32) (param $newline i32) (result i32)
    (local $slot i32) (local $start i32) (local $end i32) (local $checks i32) (local $value i64) (local $digit i32)
    (local $mode i32) (local $stop i32) (local $first i32) (local $length i32) (local $dots i32)
    (local $h1 i32) (local $h2 i32) (local $m1 i32) (local $m2 i32) (local $s1 i32) (local $s2 i32)
    (local $shift i64) (local $mask i64) (local $bytes v128) (local $wide i64) (local $probe i32) (local $id i32)
    ;; The key of the line's account (see +24 above): the host resolvers' account is a
    ;; function of a few bytes, looked up in the key table.
    (block $keyed
      (local.set $mode (i32.load (i32.const 40)))
      (if (i32.eqz (local.get $mode))
        (then (i32.store offset=24 (local.get $rec) (i32.const -2)) (br $keyed)))
      (local.set $end (i32.const -1))
      ;; x-host-header, else cs(Host): the first present ("-" and empty are not); a last
      ;; column of a CRLF line ends with its CR, which the JavaScript resolver reads without
      (local.set $slot (i32.shl (i32.load (i32.const 44)) (i32.const 3)))
      (if (local.get $slot)
        (then
          (local.set $start (i32.load offset=32 (i32.add (local.get $rec) (local.get $slot))))
          (local.set $end (i32.load offset=36 (i32.add (local.get $rec) (local.get $slot))))
          (if (i32.and (i32.eq (local.get $end) (local.get $newline))
                       (i32.eq (i32.load8_u (i32.sub (local.get $end) (i32.const 1))) (i32.const 13)))
            (then (i32.store offset=24 (local.get $rec) (i32.const -2)) (br $keyed)))
          (local.set $length (i32.sub (local.get $end) (local.get $start)))
          (if (i32.eqz (i32.or (i32.gt_s (local.get $length) (i32.const 1))
                               (i32.and (i32.eq (local.get $length) (i32.const 1))
                                        (i32.ne (i32.load8_u (local.get $start)) (i32.const 45)))))
            (then (local.set $end (i32.const -1))))))
      (if (i32.lt_s (local.get $end) (i32.const 0))
        (then
          (local.set $slot (i32.shl (i32.load (i32.const 48)) (i32.const 3)))
          (if (i32.eqz (local.get $slot))
            (then (i32.store offset=24 (local.get $rec) (i32.const -3)) (br $keyed)))
          (local.set $start (i32.load offset=32 (i32.add (local.get $rec) (local.get $slot))))
          (local.set $end (i32.load offset=36 (i32.add (local.get $rec) (local.get $slot))))
          (if (i32.and (i32.eq (local.get $end) (local.get $newline))
                       (i32.eq (i32.load8_u (i32.sub (local.get $end) (i32.const 1))) (i32.const 13)))
            (then (i32.store offset=24 (local.get $rec) (i32.const -2)) (br $keyed)))
          (local.set $length (i32.sub (local.get $end) (local.get $start)))
          (if (i32.eqz (i32.or (i32.gt_s (local.get $length) (i32.const 1))
                               (i32.and (i32.eq (local.get $length) (i32.const 1))
                                        (i32.ne (i32.load8_u (local.get $start)) (i32.const 45)))))
            (then (i32.store offset=24 (local.get $rec) (i32.const -3)) (br $keyed)))))
      (local.set $stop (local.get $end))
      (if (i32.eq (local.get $mode) (i32.const 1))
        (then
          ;; host label: up to the first dot. An IP literal ("[" first, or four dotted
          ;; numbers with a port or none) has no label: its key is the whole host (a
          ;; label has no dot, a literal has one or starts with "["), of no account.
          (local.set $first (i32.load8_u (local.get $start)))
          (if (i32.or (i32.eq (local.get $first) (i32.const 91))
                      (i32.and (i32.lt_u (i32.sub (local.get $first) (i32.const 48)) (i32.const 10))
                               (call $ipv4 (local.get $start) (local.get $end))))
            (then
              (i32.store offset=28 (local.get $rec) (local.get $start))
              (i32.store offset=32 (local.get $rec) (local.get $end))
              (local.set $id (call $find (local.get $start) (local.get $end) (i32.const -1)))
              (i32.store offset=24 (local.get $rec)
                (select (i32.const -4) (local.get $id) (i32.eq (local.get $id) (i32.const -1))))
              (br $keyed)))
          ;; the first dot of the 16 bytes from the start (bytes past the host may be
          ;; read: the text has slack), else byte by byte
          (local.set $dots (i8x16.bitmask (i8x16.eq (v128.load (local.get $start)) (v128.const i8x16 46 46 46 46 46 46 46 46 46 46 46 46 46 46 46 46))))
          (if (local.get $dots)
            (then
              (local.set $stop (i32.add (local.get $start) (i32.ctz (local.get $dots))))
              (if (i32.gt_u (local.get $stop) (local.get $end)) (then (local.set $stop (local.get $end)))))
            (else
              (local.set $stop (i32.add (local.get $start) (i32.const 16)))
              (if (i32.ge_u (local.get $stop) (local.get $end))
                (then (local.set $stop (local.get $end)))
                (else
                  (block $found
                    (loop $dot
                      (br_if $found (i32.ge_u (local.get $stop) (local.get $end)))
                      (br_if $found (i32.eq (i32.load8_u (local.get $stop)) (i32.const 46)))
                      (local.set $stop (i32.add (local.get $stop) (i32.const 1)))
                      (br $dot)))))))
          ;; A CloudFront default domain (the rest is ".cloudfront.net", letters in either
          ;; case: or-ing 32 lowers a letter and no other byte gives one) names a
          ;; distribution, not an account: keyed by the whole host like an IP literal.
          (if (i32.eq (i32.sub (local.get $end) (local.get $stop)) (i32.const 15))
            (then
              (if (i32.eq (i32.and (i8x16.bitmask (i8x16.eq
                                     (v128.or (v128.load (local.get $stop))
                                              (v128.const i8x16 0 32 32 32 32 32 32 32 32 32 32 0 32 32 32 0))
                                     (v128.const i8x16 46 99 108 111 117 100 102 114 111 110 116 46 110 101 116 0)))
                                   (i32.const 0x7fff))
                          (i32.const 0x7fff))
                (then
                  (i32.store offset=28 (local.get $rec) (local.get $start))
                  (i32.store offset=32 (local.get $rec) (local.get $end))
                  (local.set $id (call $find (local.get $start) (local.get $end) (i32.const -1)))
                  (i32.store offset=24 (local.get $rec)
                    (select (i32.const -4) (local.get $id) (i32.eq (local.get $id) (i32.const -1))))
                  (br $keyed)))))))
      (i32.store offset=28 (local.get $rec) (local.get $start))
      (i32.store offset=32 (local.get $rec) (local.get $stop))
      ;; A label of up to 16 bytes found in its first slot here (nearly every line), as
      ;; $find hashes and compares it; anything else through $find.
      (local.set $length (i32.sub (local.get $stop) (local.get $start)))
      (if (i32.le_u (local.get $length) (i32.const 16))
        (then
          (local.set $bytes (v128.and (v128.load (local.get $start))
            (i8x16.gt_u (i8x16.splat (local.get $length)) (v128.const i8x16 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15))))
          (local.set $wide (i64.add
            (i64.mul (i64x2.extract_lane 0 (local.get $bytes)) (i64.const 0x9e3779b97f4a7c15))
            (i64.mul (i64.xor (i64x2.extract_lane 1 (local.get $bytes)) (i64.extend_i32_u (local.get $length))) (i64.const 0xc2b2ae3d27d4eb4f))))
          (local.set $probe (i32.wrap_i64 (i64.shr_u (local.get $wide) (i64.const 32))))
          (local.set $probe (i32.add (i32.load (i32.const 52))
            (i32.shl (i32.and (i32.xor (local.get $probe) (i32.shr_u (local.get $probe) (i32.const 15))) (i32.const 8191)) (i32.const 5))))
          (if (i32.and (i32.and (i32.eq (i32.load offset=16 (local.get $probe)) (local.get $length))
                                (i32.ne (i32.load offset=20 (local.get $probe)) (i32.const 0)))
                       (i8x16.all_true (i8x16.eq (v128.load (local.get $probe)) (local.get $bytes))))
            (then
              (i32.store offset=24 (local.get $rec) (i32.sub (i32.load offset=20 (local.get $probe)) (i32.const 1)))
              (br $keyed)))))
      (i32.store offset=24 (local.get $rec) (call $find (local.get $start) (local.get $stop) (i32.const -1))))
    ;; date: the same 10 bytes as the previous good line's day
    (local.set $slot (i32.shl (i32.load (i32.const 28)) (i32.const 3)))
    (local.set $start (i32.load offset=32 (i32.add (local.get $rec) (local.get $slot))))
    (local.set $end (i32.load offset=36 (i32.add (local.get $rec) (local.get $slot))))
    (if (i32.and
          (i32.and (i32.load (i32.const 4)) (i32.eq (i32.sub (local.get $end) (local.get $start)) (i32.const 10)))
          (i32.and (i64.eq (i64.load (local.get $start)) (i64.load (i32.const 8)))
                   (i32.eq (i32.load16_u offset=8 (local.get $start)) (i32.load16_u (i32.const 16)))))
      (then (local.set $checks (i32.const 1)))
      (else
        ;; or the second day's
        (if (i32.and
              (i32.and (i32.load (i32.const 88)) (i32.eq (i32.sub (local.get $end) (local.get $start)) (i32.const 10)))
              (i32.and (i64.eq (i64.load (local.get $start)) (i64.load (i32.const 112)))
                       (i32.eq (i32.load16_u offset=8 (local.get $start)) (i32.load16_u (i32.const 120)))))
          (then (local.set $checks (i32.const 8))))))
    ;; time: HH:MM:SS, hours < 24, minutes < 60, seconds <= 60 (a leap second)
    (local.set $slot (i32.shl (i32.load (i32.const 32)) (i32.const 3)))
    (if (i32.eqz (local.get $slot))
      (then (local.set $checks (i32.or (local.get $checks) (i32.const 2))))
      (else
        (local.set $start (i32.load offset=32 (i32.add (local.get $rec) (local.get $slot))))
        (local.set $end (i32.load offset=36 (i32.add (local.get $rec) (local.get $slot))))
        (if (i32.and
              (i32.and (i32.eq (i32.sub (local.get $end) (local.get $start)) (i32.const 8))
                       (i32.and (i32.eq (i32.load8_u offset=2 (local.get $start)) (i32.const 58))
                                (i32.eq (i32.load8_u offset=5 (local.get $start)) (i32.const 58))))
              ;; six digits (each < 10 as unsigned), then the three numbers' bounds
              (i32.and
                (i32.and
                  (i32.and (i32.lt_u (local.tee $h1 (i32.sub (i32.load8_u (local.get $start)) (i32.const 48))) (i32.const 10))
                           (i32.lt_u (local.tee $h2 (i32.sub (i32.load8_u offset=1 (local.get $start)) (i32.const 48))) (i32.const 10)))
                  (i32.and
                    (i32.and (i32.lt_u (local.tee $m1 (i32.sub (i32.load8_u offset=3 (local.get $start)) (i32.const 48))) (i32.const 10))
                             (i32.lt_u (local.tee $m2 (i32.sub (i32.load8_u offset=4 (local.get $start)) (i32.const 48))) (i32.const 10)))
                    (i32.and (i32.lt_u (local.tee $s1 (i32.sub (i32.load8_u offset=6 (local.get $start)) (i32.const 48))) (i32.const 10))
                             (i32.lt_u (local.tee $s2 (i32.sub (i32.load8_u offset=7 (local.get $start)) (i32.const 48))) (i32.const 10)))))
                (i32.and
                  (i32.and (i32.lt_u (i32.add (i32.mul (local.get $h1) (i32.const 10)) (local.get $h2)) (i32.const 24))
                           (i32.lt_u (i32.add (i32.mul (local.get $m1) (i32.const 10)) (local.get $m2)) (i32.const 60)))
                  (i32.le_u (i32.add (i32.mul (local.get $s1) (i32.const 10)) (local.get $s2)) (i32.const 60)))))
          (then
            (local.set $checks (i32.or (local.get $checks) (i32.const 2)))
            (global.set $hour (i32.add (i32.mul (local.get $h1) (i32.const 10)) (local.get $h2)))))))
    ;; sc-bytes: "-" is 0, else 1 to 15 digits
    (local.set $slot (i32.shl (i32.load (i32.const 36)) (i32.const 3)))
    (if (i32.eqz (local.get $slot))
      (then
        (f64.store offset=16 (local.get $rec) (f64.const 0))
        (return (i32.or (local.get $checks) (i32.const 4)))))
    (local.set $start (i32.load offset=32 (i32.add (local.get $rec) (local.get $slot))))
    (local.set $end (i32.load offset=36 (i32.add (local.get $rec) (local.get $slot))))
    (if (i32.and (i32.eq (i32.sub (local.get $end) (local.get $start)) (i32.const 1))
                 (i32.eq (i32.load8_u (local.get $start)) (i32.const 45)))
      (then
        (f64.store offset=16 (local.get $rec) (f64.const 0))
        (return (i32.or (local.get $checks) (i32.const 4)))))
    (if (i32.or (i32.eq (local.get $end) (local.get $start))
                (i32.gt_s (i32.sub (local.get $end) (local.get $start)) (i32.const 15)))
      (then (return (local.get $checks))))
    ;; Up to 8 digits (nearly every line): read as one i64, with no branch per digit. The
    ;; field's bytes are shifted to the top (the bytes after it out), so that the low bytes
    ;; are zeros in front of the number; each of its bytes must be 0x30-0x39 (high nibble
    ;; 3, and still 3 with 6 added); then digits pair up: tens, hundreds, ten-thousands.
    (if (i32.le_u (i32.sub (local.get $end) (local.get $start)) (i32.const 8))
      (then
        (local.set $shift (i64.extend_i32_u (i32.shl (i32.sub (i32.const 8) (i32.sub (local.get $end) (local.get $start))) (i32.const 3))))
        (local.set $value (i64.shl (i64.load (local.get $start)) (local.get $shift)))
        (local.set $mask (i64.shl (i64.const -1) (local.get $shift)))
        (if (i64.ne (i64.and
                      (i64.or
                        (i64.xor (i64.and (local.get $value) (i64.const 0xF0F0F0F0F0F0F0F0)) (i64.const 0x3030303030303030))
                        (i64.xor (i64.and (i64.add (local.get $value) (i64.const 0x0606060606060606)) (i64.const 0xF0F0F0F0F0F0F0F0)) (i64.const 0x3030303030303030)))
                      (local.get $mask))
                    (i64.const 0))
          (then (return (local.get $checks))))
        (local.set $value (i64.sub (local.get $value) (i64.and (i64.const 0x3030303030303030) (local.get $mask))))
        (local.set $value (i64.and (i64.add (i64.mul (local.get $value) (i64.const 10)) (i64.shr_u (local.get $value) (i64.const 8))) (i64.const 0x00FF00FF00FF00FF)))
        (local.set $value (i64.and (i64.add (i64.mul (local.get $value) (i64.const 100)) (i64.shr_u (local.get $value) (i64.const 16))) (i64.const 0x0000FFFF0000FFFF)))
        (local.set $value (i64.and (i64.add (i64.mul (local.get $value) (i64.const 10000)) (i64.shr_u (local.get $value) (i64.const 32))) (i64.const 0xFFFFFFFF)))
        (f64.store offset=16 (local.get $rec) (f64.convert_i64_u (local.get $value)))
        (return (i32.or (local.get $checks) (i32.const 4)))))
    (loop $digits
      (local.set $digit (i32.sub (i32.load8_u (local.get $start)) (i32.const 48)))
      (if (i32.gt_u (local.get $digit) (i32.const 9)) (then (return (local.get $checks))))
      (local.set $value (i64.add (i64.mul (local.get $value) (i64.const 10)) (i64.extend_i32_u (local.get $digit))))
      (local.set $start (i32.add (local.get $start) (i32.const 1)))
      (br_if $digits (i32.lt_u (local.get $start) (local.get $end))))
    (f64.store offset=16 (local.get $rec) (f64.convert_i64_u (local.get $value)))
    (i32.or (local.get $checks) (i32.const 4)))

  ;; Whether [start, end) is an IPv4 literal: four numbers of one to three digits joined
  ;; by dots, then ":" and a port of one digit or more, or nothing.
  (func $ipv4 (param $p i32) (param $end i32) (result i32)
    (local $group i32) (local $digits i32)
    (loop $groups
      (local.set $digits (i32.const 0))
      (block $number
        (loop $digit
          (br_if $number (i32.ge_u (local.get $p) (local.get $end)))
          (br_if $number (i32.ge_u (i32.sub (i32.load8_u (local.get $p)) (i32.const 48)) (i32.const 10)))
          (br_if $number (i32.eq (local.get $digits) (i32.const 3)))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
          (br $digit)))
      (if (i32.eqz (local.get $digits)) (then (return (i32.const 0))))
      (local.set $group (i32.add (local.get $group) (i32.const 1)))
      (if (i32.lt_u (local.get $group) (i32.const 4))
        (then
          (if (i32.or (i32.ge_u (local.get $p) (local.get $end)) (i32.ne (i32.load8_u (local.get $p)) (i32.const 46)))
            (then (return (i32.const 0))))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (br $groups))))
    (if (i32.eq (local.get $p) (local.get $end)) (then (return (i32.const 1))))
    (if (i32.ne (i32.load8_u (local.get $p)) (i32.const 58)) (then (return (i32.const 0))))
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (i32.const 0))))
    (loop $port
      (if (i32.ge_u (i32.sub (i32.load8_u (local.get $p)) (i32.const 48)) (i32.const 10)) (then (return (i32.const 0))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br_if $port (i32.lt_u (local.get $p) (local.get $end))))
    (i32.const 1))

  ;; keyId(start, end, id): the id of the key bytes [start, end) in the key table; when
  ;; it is not there, remembers it as `id` (and answers `id`), or answers -2 when the
  ;; key is too long or the table full.
  (func (export "keyId") (param $start i32) (param $end i32) (param $id i32) (result i32)
    (call $find (local.get $start) (local.get $end) (local.get $id)))

  ;; The key table, at [52]: 8,192 slots of 32 bytes (a key's first 16 bytes, zero past
  ;; its end; +16 its length; +20 its id + 1, 0 when the slot is free; +24 where all of
  ;; its bytes are), then the pool (64 bytes per id). [56] holds the number of keys.
  ;; Finds [start, end); when missing and `id` >= 0, adds it as `id` (which must be the
  ;; number of keys). A key of up to 16 bytes (an account's host label) is hashed and
  ;; compared as one vector in its slot: one place in memory per lookup; a longer one
  ;; is hashed and compared byte by byte.
  ;; $check probes a short key's first slot itself with the same hash (a call per line
  ;; saved: legacy 85.8 -> 84.5 ms, JSON 140 -> 134 ms warm): change the two together, or
  ;; $check's probe misses and every lookup comes here (slower, never wrong).
  (func $find (param $start i32) (param $end i32) (param $id i32) (result i32)
    (local $hash i32) (local $i i32) (local $table i32) (local $slot i32) (local $at i32) (local $length i32) (local $key i32)
    (local $bytes v128) (local $wide i64)
    (local.set $length (i32.sub (local.get $end) (local.get $start)))
    (if (i32.gt_u (local.get $length) (i32.const 64)) (then (return (i32.const -2))))
    (if (i32.le_u (local.get $length) (i32.const 16))
      (then
        (local.set $bytes (v128.and (v128.load (local.get $start))
          (i8x16.gt_u (i8x16.splat (local.get $length)) (v128.const i8x16 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15))))
        (local.set $wide (i64.add
          (i64.mul (i64x2.extract_lane 0 (local.get $bytes)) (i64.const 0x9e3779b97f4a7c15))
          (i64.mul (i64.xor (i64x2.extract_lane 1 (local.get $bytes)) (i64.extend_i32_u (local.get $length))) (i64.const 0xc2b2ae3d27d4eb4f))))
        (local.set $hash (i32.wrap_i64 (i64.shr_u (local.get $wide) (i64.const 32)))))
      (else
        (local.set $bytes (v128.load (local.get $start)))
        (local.set $hash (i32.const 0x811c9dc5))
        (local.set $i (local.get $start))
        (block $hashed
          (loop $bytes
            (br_if $hashed (i32.ge_u (local.get $i) (local.get $end)))
            (local.set $hash (i32.mul (i32.xor (local.get $hash) (i32.load8_u (local.get $i))) (i32.const 0x01000193)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $bytes)))))
    (local.set $table (i32.load (i32.const 52)))
    (local.set $slot (i32.and (i32.xor (local.get $hash) (i32.shr_u (local.get $hash) (i32.const 15))) (i32.const 8191)))
    (loop $probe
      (local.set $at (i32.add (local.get $table) (i32.shl (local.get $slot) (i32.const 5))))
      (if (i32.eqz (i32.load offset=20 (local.get $at)))
        (then
          (if (i32.or (i32.lt_s (local.get $id) (i32.const 0)) (i32.ge_u (local.get $id) (i32.const 4096)))
            (then (return (select (i32.const -1) (i32.const -2) (i32.lt_s (local.get $id) (i32.const 0))))))
          (local.set $key (i32.add (i32.add (local.get $table) (i32.const 262144)) (i32.shl (local.get $id) (i32.const 6))))
          (memory.copy (local.get $key) (local.get $start) (local.get $length))
          (v128.store (local.get $at) (local.get $bytes))
          (i32.store offset=16 (local.get $at) (local.get $length))
          (i32.store offset=20 (local.get $at) (i32.add (local.get $id) (i32.const 1)))
          (i32.store offset=24 (local.get $at) (local.get $key))
          (i32.store (i32.const 56) (i32.add (local.get $id) (i32.const 1)))
          (return (local.get $id))))
      (if (i32.eq (i32.load offset=16 (local.get $at)) (local.get $length))
        (then
          (if (i32.le_u (local.get $length) (i32.const 16))
            (then
              (if (i8x16.all_true (i8x16.eq (v128.load (local.get $at)) (local.get $bytes)))
                (then (return (i32.sub (i32.load offset=20 (local.get $at)) (i32.const 1))))))
            (else
              (local.set $key (i32.load offset=24 (local.get $at)))
              (local.set $i (i32.const 0))
              (block $differ
                (loop $compare
                  (if (i32.ge_u (local.get $i) (local.get $length))
                    (then (return (i32.sub (i32.load offset=20 (local.get $at)) (i32.const 1)))))
                  (br_if $differ (i32.ne (i32.load8_u (i32.add (local.get $key) (local.get $i)))
                                         (i32.load8_u (i32.add (local.get $start) (local.get $i)))))
                  (local.set $i (i32.add (local.get $i) (i32.const 1)))
                  (br $compare)))))))
      (local.set $slot (i32.and (i32.add (local.get $slot) (i32.const 1)) (i32.const 8191)))
      (br $probe))
    (unreachable))
)
