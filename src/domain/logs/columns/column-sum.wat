;; The per-row part of counting Parquet rows column by column, in WebAssembly: each row's
;; day, hour and sc-bytes checked and read, its account found from its host pair, and its
;; request and bytes added to its account-day's hour. The source of column-sum-wasm.ts,
;; which `node scripts/build-wasm.mjs` writes (a unit test checks the two agree);
;; column-sum.ts lays out the memory, copies a chunk of each column in and calls $sum.
;;
;; Why WebAssembly: a fresh process ran these loops as unoptimized JavaScript for much of
;; a file (on the bench's 900,000-row files about 80 ms of a 0.17 s count), while V8
;; compiles a module at once (issue 34).
;;
;; What a row needs that only JavaScript knows (a dictionary entry's day, time verdict or
;; byte count, a host pair's account, a typed date's day) is looked up in a table the
;; caller fills; a row whose entry is not known yet stops the loop ($sum answers the row
;; and sets $reason), the caller finds it (in row order, as the rows come: ids and
;; resolver samples fall where they fell row by row) and calls again from that row. A row
;; that must be counted as its line stops the loop the same way.
;;
;; Memory (offsets in the globals, set by the caller):
;; - $cells: per account-day cell (account × 64 + day) its number here + 1 (0: none yet);
;; - $dayCells: per number, its cell; $sums: per number × 25 + hour + 1 (0: hour not
;;   known), two Float64 sums, requests then bytes;
;; - the tables: $dayTable (Int32, per date entry + 1: day id, -1 a line, -2 not known),
;;   $timeTable (Int32, per time entry + 1: hour + 1, 0 a line; filled whole by
;;   $timeVerdicts when its dictionary is new),
;;   $bytesTable (Float64, per sc-bytes entry + 1: the count, -1 a line, -2 not known),
;;   $pairTable (Int32, per host pair: account id, -1 a line, -2 not known; a new
;;   dictionary's pairs of hosts met before filled in at once by $prefillPairs);
;; - $constants: what an absent column is read as; the hosts remembered ($hostSlots,
;;   $hostEntries, their texts);
;; - the chunk's columns, row 0 first: $dateIn (Int32 entries, or Float64 numbers),
;;   $timeIn (Int32 entries), $bytesIn (Float64, or Int32 entries), $xIn and $cIn (Int32
;;   entries of x-host-header and cs(Host)).
(module
  (memory (export "memory") 1)
  ;; 0: date entries through $dayTable; 1: date numbers through $dayValues.
  (global $dayMode (export "dayMode") (mut i32) (i32.const 0))
  ;; 0: no time column (hour not known); 1: time entries through $timeTable.
  (global $timeMode (export "timeMode") (mut i32) (i32.const 0))
  ;; 0: no sc-bytes (0); 1: byte counts (Float64, -1 a line); 2: integers (Float64, NaN
  ;; none: 0; outside [0, 1e15) a line); 3: entries through $bytesTable.
  (global $bytesMode (export "bytesMode") (mut i32) (i32.const 0))
  ;; Bit 0: an x-host-header column; bit 1: a cs(Host) column. A pair is
  ;; (x entry + 1) × $cWidth + c entry + 1.
  (global $hosts (export "hosts") (mut i32) (i32.const 0))
  (global $cWidth (export "cWidth") (mut i32) (i32.const 1))
  ;; Eight typed date values (Float64, NaN: none) and their day ids (Int32), 16 bytes each:
  ;; the days a run's rows are of (a log is of a day or two; a date not among them stops).
  (global $dayValues (export "dayValues") (mut i32) (i32.const 0))
  ;; 24 bytes the caller fills: an Int32 -1 (no entry) at 0, a Float64 0 at 8, and an
  ;; Int32 1 at 16 (the first hour slot): what an absent column is read as.
  (global $constants (export "constants") (mut i32) (i32.const 0))
  ;; The hosts whose accounts the caller has found (a mirror of its cache, cleared when it
  ;; is): $hostSlots (Int32 per slot, $hostMask + 1 of them: entry + 1, 0 empty), $hostEntries
  ;; (per entry four Int32: its text's place and length in $hostArena, its hash, its
  ;; account), $hostCount of them, the texts one after another up to $hostArenaEnd.
  (global $hostSlots (export "hostSlots") (mut i32) (i32.const 0))
  (global $hostMask (export "hostMask") (mut i32) (i32.const 0))
  (global $hostEntries (export "hostEntries") (mut i32) (i32.const 0))
  (global $hostCount (export "hostCount") (mut i32) (i32.const 0))
  (global $hostArenaEnd (export "hostArenaEnd") (mut i32) (i32.const 0))
  (global $cells (export "cells") (mut i32) (i32.const 0))
  (global $dayCells (export "dayCells") (mut i32) (i32.const 0))
  (global $sums (export "sums") (mut i32) (i32.const 0))
  ;; Cells numbered so far, and how many $dayCells and $sums have room for.
  (global $numbered (export "numbered") (mut i32) (i32.const 0))
  (global $capacity (export "capacity") (mut i32) (i32.const 0))
  (global $dayTable (export "dayTable") (mut i32) (i32.const 0))
  (global $timeTable (export "timeTable") (mut i32) (i32.const 0))
  (global $bytesTable (export "bytesTable") (mut i32) (i32.const 0))
  (global $pairTable (export "pairTable") (mut i32) (i32.const 0))
  (global $dateIn (export "dateIn") (mut i32) (i32.const 0))
  (global $timeIn (export "timeIn") (mut i32) (i32.const 0))
  (global $bytesIn (export "bytesIn") (mut i32) (i32.const 0))
  (global $xIn (export "xIn") (mut i32) (i32.const 0))
  (global $cIn (export "cIn") (mut i32) (i32.const 0))
  ;; Why the last $sum stopped before its `to`: 1 a day not known (the row's date entry,
  ;; or a date number not in $dayValues), 3 a byte count
  ;; entry not known, 4 a host pair not known, 5 the row is counted as its line, 6 a new
  ;; cell and no room ($capacity).
  (global $reason (export "reason") (mut i32) (i32.const 0))

  ;; Counts rows [from, to) of the chunk; answers the row it stopped at (`to`: all counted).
  ;;
  ;; One loop for every mode, each column read through a pointer that moves on by its
  ;; stride: an absent column (no time, no sc-bytes, one host column) is read at
  ;; $constants with a stride of 0, as a value that counts as its absence does. The loop
  ;; this replaced asked each mode on every row and recomputed each column's address from
  ;; the row: 9 ns a row of the typed bench file against 5 now (issue 34).
  (func (export "sum") (param $from i32) (param $to i32) (result i32)
    (local $row i32) (local $day i32) (local $verdict i32) (local $pair i32) (local $account i32)
    (local $cell i32) (local $number i32) (local $at i32) (local $value f64) (local $sent f64)
    (local $lastValue f64)
    (local $dateP i32) (local $timeP i32) (local $bytesP i32) (local $xP i32) (local $cP i32)
    (local $timeStride i32) (local $bytesStride i32) (local $xStride i32) (local $cStride i32)
    (local $dayByEntry i32) (local $bytesByEntry i32)
    (local $dayTable i32) (local $timeTable i32) (local $bytesTable i32) (local $pairTable i32)
    (local $cells i32) (local $sums i32) (local $cWidth i32)
    ;; The settings in locals: they do not change during a call, and a global is read from
    ;; the instance on every row.
    (local.set $dayByEntry (i32.eqz (global.get $dayMode)))
    (local.set $dateP (i32.add (global.get $dateIn)
      (i32.shl (local.get $from) (select (i32.const 2) (i32.const 3) (local.get $dayByEntry)))))
    ;; Tables are read at entry + 1 (entry -1: no value): their locals start one entry on.
    (local.set $dayTable (i32.add (global.get $dayTable) (i32.const 4)))
    (local.set $sums (global.get $sums))
    (if (global.get $timeMode)
      (then
        (local.set $timeStride (i32.const 4))
        (local.set $timeP (i32.add (global.get $timeIn) (i32.shl (local.get $from) (i32.const 2))))
        (local.set $timeTable (i32.add (global.get $timeTable) (i32.const 4))))
      (else
        ;; No time: entry -1 of a table whose entry 0 is 1, the first hour slot, and the
        ;; sums read one slot back: slot 0, the hour not known.
        (local.set $timeP (global.get $constants))
        (local.set $timeTable (i32.add (global.get $constants) (i32.const 20)))
        (local.set $sums (i32.sub (local.get $sums) (i32.const 16)))))
    (local.set $bytesByEntry (i32.eq (global.get $bytesMode) (i32.const 3)))
    (local.set $bytesTable (i32.add (global.get $bytesTable) (i32.const 8)))
    (if (global.get $bytesMode)
      (then
        (local.set $bytesStride (select (i32.const 4) (i32.const 8) (local.get $bytesByEntry)))
        (local.set $bytesP (i32.add (global.get $bytesIn) (i32.mul (local.get $from) (local.get $bytesStride)))))
      ;; No sc-bytes: 0 (a Float64 at $constants + 8).
      (else (local.set $bytesP (i32.add (global.get $constants) (i32.const 8)))))
    ;; A host column not read: entry -1, which adds 0 to the pair.
    (if (i32.and (global.get $hosts) (i32.const 1))
      (then
        (local.set $xStride (i32.const 4))
        (local.set $xP (i32.add (global.get $xIn) (i32.shl (local.get $from) (i32.const 2)))))
      (else (local.set $xP (global.get $constants))))
    (if (i32.and (global.get $hosts) (i32.const 2))
      (then
        (local.set $cStride (i32.const 4))
        (local.set $cP (i32.add (global.get $cIn) (i32.shl (local.get $from) (i32.const 2)))))
      (else (local.set $cP (global.get $constants))))
    (local.set $pairTable (global.get $pairTable))
    (local.set $cells (global.get $cells))
    (local.set $cWidth (global.get $cWidth))
    (local.set $lastValue (f64.const nan))
    (local.set $row (local.get $from))
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $row) (local.get $to)))
        ;; The day.
        (if (local.get $dayByEntry)
          (then
            (local.set $day (i32.load (i32.add (local.get $dayTable) (i32.shl (i32.load (local.get $dateP)) (i32.const 2)))))
            (if (i32.eq (local.get $day) (i32.const -2)) (then (return (call $stop (local.get $row) (i32.const 1)))))
            (local.set $dateP (i32.add (local.get $dateP) (i32.const 4))))
          (else
            ;; The date of the row before is asked first: rows of one day come together.
            (local.set $value (f64.load (local.get $dateP)))
            (if (f64.ne (local.get $value) (local.get $lastValue))
              (then
                (local.set $day (call $dayOfValue (local.get $value)))
                (if (i32.eq (local.get $day) (i32.const -2)) (then (return (call $stop (local.get $row) (i32.const 1)))))
                (local.set $lastValue (local.get $value))))
            (local.set $dateP (i32.add (local.get $dateP) (i32.const 8)))))
        (if (i32.lt_s (local.get $day) (i32.const 0)) (then (return (call $stop (local.get $row) (i32.const 5)))))
        ;; The hour slot: the time entry's verdict, hour + 1 (0: a line).
        (local.set $verdict (i32.load (i32.add (local.get $timeTable) (i32.shl (i32.load (local.get $timeP)) (i32.const 2)))))
        (if (i32.eqz (local.get $verdict)) (then (return (call $stop (local.get $row) (i32.const 5)))))
        ;; The sc-bytes: a count in [0, 1e15); none (NaN, a typed integer's null) is 0;
        ;; anything else (-1, a text's no byte count) makes the row its line.
        (if (local.get $bytesByEntry)
          (then
            (local.set $sent (f64.load (i32.add (local.get $bytesTable) (i32.shl (i32.load (local.get $bytesP)) (i32.const 3)))))
            (if (f64.eq (local.get $sent) (f64.const -2)) (then (return (call $stop (local.get $row) (i32.const 3))))))
          (else (local.set $sent (f64.load (local.get $bytesP)))))
        (if (i32.eqz (i32.and (f64.ge (local.get $sent) (f64.const 0)) (f64.lt (local.get $sent) (f64.const 1e15))))
          (then
            (if (f64.eq (local.get $sent) (local.get $sent)) (then (return (call $stop (local.get $row) (i32.const 5)))))
            (local.set $sent (f64.const 0))))
        ;; The account, of the host pair.
        (local.set $pair (i32.add
          (i32.mul (i32.add (i32.load (local.get $xP)) (i32.const 1)) (local.get $cWidth))
          (i32.add (i32.load (local.get $cP)) (i32.const 1))))
        (local.set $account (i32.load (i32.add (local.get $pairTable) (i32.shl (local.get $pair) (i32.const 2)))))
        (if (i32.lt_s (local.get $account) (i32.const 0))
          (then (return (call $stop (local.get $row) (select (i32.const 4) (i32.const 5) (i32.eq (local.get $account) (i32.const -2)))))))
        ;; The account-day's number (numbered when first met), and its hour's sums.
        (local.set $cell (i32.add (i32.shl (local.get $account) (i32.const 6)) (local.get $day)))
        (local.set $at (i32.add (local.get $cells) (i32.shl (local.get $cell) (i32.const 2))))
        (local.set $number (i32.sub (i32.load (local.get $at)) (i32.const 1)))
        (if (i32.lt_s (local.get $number) (i32.const 0))
          (then
            (if (i32.ge_u (global.get $numbered) (global.get $capacity)) (then (return (call $stop (local.get $row) (i32.const 6)))))
            (local.set $number (global.get $numbered))
            (global.set $numbered (i32.add (local.get $number) (i32.const 1)))
            (i32.store (local.get $at) (i32.add (local.get $number) (i32.const 1)))
            (i32.store (i32.add (global.get $dayCells) (i32.shl (local.get $number) (i32.const 2))) (local.get $cell))))
        (local.set $at (i32.add (local.get $sums)
          (i32.shl (i32.add (i32.mul (local.get $number) (i32.const 25)) (local.get $verdict)) (i32.const 4))))
        (f64.store (local.get $at) (f64.add (f64.load (local.get $at)) (f64.const 1)))
        (f64.store offset=8 (local.get $at) (f64.add (f64.load offset=8 (local.get $at)) (local.get $sent)))
        (local.set $timeP (i32.add (local.get $timeP) (local.get $timeStride)))
        (local.set $bytesP (i32.add (local.get $bytesP) (local.get $bytesStride)))
        (local.set $xP (i32.add (local.get $xP) (local.get $xStride)))
        (local.set $cP (i32.add (local.get $cP) (local.get $cStride)))
        (local.set $row (i32.add (local.get $row) (i32.const 1)))
        (br $rows)))
    (local.get $to))

  ;; Remembers `account` for the host text of `length` bytes the caller copied to
  ;; $hostArenaEnd (where it stays), having checked the room: entries, slots and arena. A
  ;; text remembered already is left as it is.
  (func (export "hostAdd") (param $length i32) (param $account i32)
    (local $at i32) (local $hash i32) (local $slot i32) (local $entry i32)
    (local.set $at (global.get $hostArenaEnd))
    (if (i32.ne (call $hostAccount (local.get $at) (local.get $length)) (i32.const -2)) (then (return)))
    (local.set $hash (call $hostHash (local.get $at) (local.get $length)))
    (local.set $entry (i32.add (global.get $hostEntries) (i32.shl (global.get $hostCount) (i32.const 4))))
    (i32.store (local.get $entry) (local.get $at))
    (i32.store offset=4 (local.get $entry) (local.get $length))
    (i32.store offset=8 (local.get $entry) (local.get $hash))
    (i32.store offset=12 (local.get $entry) (local.get $account))
    (global.set $hostCount (i32.add (global.get $hostCount) (i32.const 1)))
    (global.set $hostArenaEnd (i32.add (local.get $at) (local.get $length)))
    (local.set $slot (i32.and (local.get $hash) (global.get $hostMask)))
    (block $placed
      (loop $probe
        (br_if $placed (i32.eqz (i32.load (i32.add (global.get $hostSlots) (i32.shl (local.get $slot) (i32.const 2))))))
        (local.set $slot (i32.and (i32.add (local.get $slot) (i32.const 1)) (global.get $hostMask)))
        (br $probe)))
    (i32.store (i32.add (global.get $hostSlots) (i32.shl (local.get $slot) (i32.const 2))) (global.get $hostCount)))

  ;; The account remembered for the `length` bytes at `at`; -2 when none is.
  (func $hostAccount (param $at i32) (param $length i32) (result i32)
    (local $hash i32) (local $slot i32) (local $entry i32) (local $i i32) (local $key i32)
    (local.set $hash (call $hostHash (local.get $at) (local.get $length)))
    (local.set $slot (i32.and (local.get $hash) (global.get $hostMask)))
    (loop $probe
      (local.set $entry (i32.load (i32.add (global.get $hostSlots) (i32.shl (local.get $slot) (i32.const 2)))))
      (if (i32.eqz (local.get $entry)) (then (return (i32.const -2))))
      (local.set $entry (i32.add (global.get $hostEntries) (i32.shl (i32.sub (local.get $entry) (i32.const 1)) (i32.const 4))))
      (if (i32.and
            (i32.eq (i32.load offset=8 (local.get $entry)) (local.get $hash))
            (i32.eq (i32.load offset=4 (local.get $entry)) (local.get $length)))
        (then
          (local.set $key (i32.load (local.get $entry)))
          (local.set $i (i32.const 0))
          (block $differs
            (loop $bytes
              (if (i32.ge_u (local.get $i) (local.get $length)) (then (return (i32.load offset=12 (local.get $entry)))))
              (br_if $differs (i32.ne (i32.load8_u (i32.add (local.get $key) (local.get $i))) (i32.load8_u (i32.add (local.get $at) (local.get $i)))))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br $bytes)))))
      (local.set $slot (i32.and (i32.add (local.get $slot) (i32.const 1)) (global.get $hostMask)))
      (br $probe))
    (i32.const -2))

  ;; FNV-1a of the `length` bytes at `at`.
  (func $hostHash (param $at i32) (param $length i32) (result i32)
    (local $hash i32) (local $end i32)
    (local.set $hash (i32.const 0x811c9dc5))
    (local.set $end (i32.add (local.get $at) (local.get $length)))
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $at) (local.get $end)))
        (local.set $hash (i32.mul (i32.xor (local.get $hash) (i32.load8_u (local.get $at))) (i32.const 0x01000193)))
        (local.set $at (i32.add (local.get $at) (i32.const 1)))
        (br $bytes)))
    (i32.xor (local.get $hash) (i32.shr_u (local.get $hash) (i32.const 15))))

  ;; Fills the $pairTable entries still not known (-2) of the `pairs` host pairs whose
  ;; viewer host (x-host-header's entry when it has a value, else cs(Host)'s) is a host
  ;; remembered ($hostAdd), or which have none (`none`: the account of no host, -2 when not
  ;; known yet). A column's dictionary: its text at `bytes`, entry i at [starts[i],
  ;; ends[i]) (Int32 each), `count` entries (0: no such column). A pair is (x entry + 1) ×
  ;; `cWidth` + c entry + 1. Only what the caller would find in its own cache is filled: no
  ;; account is made here, and the pairs left are found by the caller as rows meet them.
  (func (export "prefillPairs")
    (param $xBytes i32) (param $xStarts i32) (param $xEnds i32) (param $xCount i32)
    (param $cBytes i32) (param $cStarts i32) (param $cEnds i32) (param $cCount i32)
    (param $cWidth i32) (param $none i32)
    (local $pair i32) (local $pairs i32) (local $at i32) (local $entry i32) (local $account i32) (local $start i32) (local $length i32)
    (local.set $pairs (i32.mul (i32.add (local.get $xCount) (i32.const 1)) (local.get $cWidth)))
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $pair) (local.get $pairs)))
        (local.set $at (i32.add (global.get $pairTable) (i32.shl (local.get $pair) (i32.const 2))))
        (if (i32.eq (i32.load (local.get $at)) (i32.const -2))
          (then
            (local.set $account (local.get $none))
            (block $viewer
              ;; x-host-header's entry, when it has a value (not empty, not `-`).
              (local.set $entry (i32.sub (i32.div_u (local.get $pair) (local.get $cWidth)) (i32.const 1)))
              (if (i32.ge_s (local.get $entry) (i32.const 0))
                (then
                  (local.set $start (i32.load (i32.add (local.get $xStarts) (i32.shl (local.get $entry) (i32.const 2)))))
                  (local.set $length (i32.sub (i32.load (i32.add (local.get $xEnds) (i32.shl (local.get $entry) (i32.const 2)))) (local.get $start)))
                  (if (call $hasValue (i32.add (local.get $xBytes) (local.get $start)) (local.get $length))
                    (then
                      (local.set $account (call $hostAccount (i32.add (local.get $xBytes) (local.get $start)) (local.get $length)))
                      (br $viewer)))))
              ;; Else cs(Host)'s.
              (local.set $entry (i32.sub (i32.rem_u (local.get $pair) (local.get $cWidth)) (i32.const 1)))
              (if (i32.ge_s (local.get $entry) (i32.const 0))
                (then
                  (local.set $start (i32.load (i32.add (local.get $cStarts) (i32.shl (local.get $entry) (i32.const 2)))))
                  (local.set $length (i32.sub (i32.load (i32.add (local.get $cEnds) (i32.shl (local.get $entry) (i32.const 2)))) (local.get $start)))
                  (if (call $hasValue (i32.add (local.get $cBytes) (local.get $start)) (local.get $length))
                    (then (local.set $account (call $hostAccount (i32.add (local.get $cBytes) (local.get $start)) (local.get $length))))))))
            (if (i32.ge_s (local.get $account) (i32.const 0)) (then (i32.store (local.get $at) (local.get $account))))))
        (local.set $pair (i32.add (local.get $pair) (i32.const 1)))
        (br $each))))

  ;; Whether the `length` bytes at `at` are a value: not empty, not `-`.
  (func $hasValue (param $at i32) (param $length i32) (result i32)
    (i32.or (i32.gt_s (local.get $length) (i32.const 1))
      (i32.and (i32.eq (local.get $length) (i32.const 1)) (i32.ne (i32.load8_u (local.get $at)) (i32.const 45)))))

  ;; The time verdicts of a dictionary's `count` entries, into `out` (Int32, entry + 1; 0,
  ;; no value, is a line): an `HH:MM:SS` time (hours 00-23, minutes 00-59, seconds 00-60,
  ;; as cloudfront-log.ts's isValidTimeBytes reads it) its hour + 1, anything else 0.
  ;; Entry i's text is bytes [`bytes` + starts[i], `bytes` + ends[i]).
  (func (export "timeVerdicts") (param $bytes i32) (param $starts i32) (param $ends i32) (param $count i32) (param $out i32)
    (local $i i32) (local $at i32) (local $start i32) (local $verdict i32) (local $hours i32) (local $minutes i32) (local $seconds i32)
    (i32.store (local.get $out) (i32.const 0))
    (block $done
      (loop $entries
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (local.set $at (i32.shl (local.get $i) (i32.const 2)))
        (local.set $start (i32.load (i32.add (local.get $starts) (local.get $at))))
        (local.set $verdict (i32.const 0))
        (if (i32.eq (i32.sub (i32.load (i32.add (local.get $ends) (local.get $at))) (local.get $start)) (i32.const 8))
          (then
            (local.set $start (i32.add (local.get $bytes) (local.get $start)))
            (if (i32.and
                  (i32.eq (i32.load8_u offset=2 (local.get $start)) (i32.const 58))
                  (i32.eq (i32.load8_u offset=5 (local.get $start)) (i32.const 58)))
              (then
                (local.set $hours (call $twoDigits (local.get $start)))
                (local.set $minutes (call $twoDigits (i32.add (local.get $start) (i32.const 3))))
                (local.set $seconds (call $twoDigits (i32.add (local.get $start) (i32.const 6))))
                ;; Unsigned: -1 (no two digits) is past every bound.
                (if (i32.and
                      (i32.and (i32.lt_u (local.get $hours) (i32.const 24)) (i32.lt_u (local.get $minutes) (i32.const 60)))
                      (i32.le_u (local.get $seconds) (i32.const 60)))
                  (then (local.set $verdict (i32.add (local.get $hours) (i32.const 1)))))))))
        (i32.store (i32.add (local.get $out) (i32.add (local.get $at) (i32.const 4))) (local.get $verdict))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $entries))))

  ;; The two decimal digits at `at` as a number; -1 when they are not two digits.
  (func $twoDigits (param $at i32) (result i32)
    (local $tens i32) (local $ones i32)
    (local.set $tens (i32.sub (i32.load8_u (local.get $at)) (i32.const 48)))
    (local.set $ones (i32.sub (i32.load8_u offset=1 (local.get $at)) (i32.const 48)))
    (if (result i32) (i32.or (i32.gt_u (local.get $tens) (i32.const 9)) (i32.gt_u (local.get $ones) (i32.const 9)))
      (then (i32.const -1))
      (else (i32.add (i32.mul (local.get $tens) (i32.const 10)) (local.get $ones)))))

  ;; The day id of a typed date value, from the $dayValues the caller found (-2: none of
  ;; them). NaN is no value's equal: a row of none is not found either (the caller counts
  ;; it as its line).
  (func $dayOfValue (param $value f64) (result i32)
    (local $at i32) (local $end i32)
    (local.set $at (global.get $dayValues))
    (local.set $end (i32.add (local.get $at) (i32.const 128)))
    (block $missing
      (loop $values
        (br_if $missing (i32.ge_u (local.get $at) (local.get $end)))
        (if (f64.eq (f64.load (local.get $at)) (local.get $value)) (then (return (i32.load offset=8 (local.get $at)))))
        (local.set $at (i32.add (local.get $at) (i32.const 16)))
        (br $values)))
    (i32.const -2))

  ;; Stops at `row` for `reason`.
  (func $stop (param $row i32) (param $reason i32) (result i32)
    (global.set $reason (local.get $reason))
    (local.get $row)))
