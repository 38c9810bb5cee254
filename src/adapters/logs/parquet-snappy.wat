;; Snappy's raw format decoded in WebAssembly: the codec of CloudFront's Parquet logs and
;; of DuckDB's. The source of src/adapters/logs/parquet-snappy-wasm.ts, which
;; `node scripts/build-wasm.mjs` writes (a unit test checks the two agree);
;; src/adapters/logs/parquet-snappy.ts copies a page in, calls $uncompress and copies the
;; bytes out into an array the page reader keeps from page to page, where the decoder it
;; replaces (hysnappy) made a new array of every page: most of its cost on a fresh
;; process's count was the new memory, not the decoding (issue 34).
;;
;; The format (https://github.com/google/snappy/blob/main/format_description.txt): the
;; uncompressed length as a ULEB128 varint, then elements, each a tag byte whose low two
;; bits say what it is:
;;   00 a literal: its length - 1 is tag >> 2 when under 60, else in the 1-4 bytes
;;      (little-endian) after the tag, as tag >> 2 = 60-63 says; the bytes follow.
;;   01 a copy of 4 + ((tag >> 2) & 7) bytes from ((tag >> 5) << 8 | next byte) back.
;;   10 a copy of 1 + (tag >> 2) bytes from the little-endian 16-bit offset back.
;;   11 a copy of 1 + (tag >> 2) bytes from the little-endian 32-bit offset back.
;; A copy's offset may be less than its length: the bytes it repeats are the ones it writes.
;;
;; Memory, laid out by the caller: the input at [in, in + inLength), then 16 bytes the
;; caller owns (a short literal is read 16 bytes at a time); the output at [out, out +
;; outLength), then 16 bytes the caller owns (a short literal or a copy writes 16 bytes
;; at a time: what goes past its end is written over by what follows, or is past the
;; output and never read). Every read and write is checked against those bounds
;; first: a damaged input gets a status, never a write outside them.
(module
  ;; The decoders' one memory (decoding-memory.ts).
  (import "decoding" "memory" (memory $memory 1))

  ;; Decodes [in, in + inLength) to [out, out + outLength). Answers 0, or why not: 1 the
  ;; length varint is damaged, 2 it is not `outLength`, 3 an element runs past the input,
  ;; 4 an element writes past the output, 5 a copy's offset is 0 or before the output's
  ;; start, 6 the input ends before the output is whole.
  (func (export "uncompress") (param $in i32) (param $inLength i32) (param $out i32) (param $outLength i32) (result i32)
    (local $ip i32) (local $inEnd i32) (local $op i32) (local $outEnd i32)
    (local $tag i32) (local $length i32) (local $offset i32) (local $extra i32)
    (local $from i32) (local $shift i32) (local $byte i32) (local $declared i32) (local $copyEnd i32)
    (local $inFastEnd i32) (local $outFastEnd i32)
    (local.set $ip (local.get $in))
    (local.set $inEnd (i32.add (local.get $in) (local.get $inLength)))
    (local.set $op (local.get $out))
    (local.set $outEnd (i32.add (local.get $out) (local.get $outLength)))
    ;; The fast path (below) takes an element only while ip + 17 <= inEnd and op + 16 <=
    ;; outEnd: then no element it takes can read or write past the caller's layout.
    ;; Shorter buffers never take it (the ends are set to the starts).
    (local.set $inFastEnd (select (i32.sub (local.get $inEnd) (i32.const 16)) (local.get $in) (i32.gt_u (local.get $inLength) (i32.const 16))))
    (local.set $outFastEnd (select (i32.sub (local.get $outEnd) (i32.const 15)) (local.get $out) (i32.ge_u (local.get $outLength) (i32.const 16))))
    ;; The uncompressed length, at most 5 bytes and 32 bits.
    (block $lengthRead
      (loop $lengthByte
        (if (i32.ge_u (local.get $ip) (local.get $inEnd)) (then (return (i32.const 1))))
        (if (i32.gt_u (local.get $shift) (i32.const 28)) (then (return (i32.const 1))))
        (local.set $byte (i32.load8_u (local.get $ip)))
        (local.set $ip (i32.add (local.get $ip) (i32.const 1)))
        (local.set $declared (i32.or (local.get $declared) (i32.shl (i32.and (local.get $byte) (i32.const 127)) (local.get $shift))))
        (local.set $shift (i32.add (local.get $shift) (i32.const 7)))
        (br_if $lengthByte (i32.and (local.get $byte) (i32.const 128)))))
    (if (i32.ne (local.get $declared) (local.get $outLength)) (then (return (i32.const 2))))
    (block $done
      (loop $elements
        ;; The fast path: the common elements (a literal of at most 16 bytes; a copy of at
        ;; most 16 bytes from at least 16 back, with a 1- or 2-byte offset), each moved as
        ;; one 16-byte load and store, with no loop. Far enough from both ends (above) their
        ;; lengths need no check; a copy's offset is checked as the checked path checks it.
        ;; Any other element, or one near an end, is left to the checked path below, from
        ;; its tag: the statuses are that path's alone. (Choosing literal or copy by
        ;; `select` instead of branches measured slower, 1.8 against 3.5 GB/s, issue 34.)
        (if (i32.and (i32.lt_u (local.get $ip) (local.get $inFastEnd)) (i32.lt_u (local.get $op) (local.get $outFastEnd)))
          (then
            (local.set $tag (i32.load8_u (local.get $ip)))
            (if (i32.eqz (i32.and (local.get $tag) (i32.const 195)))
              (then
                (local.set $length (i32.add (i32.shr_u (local.get $tag) (i32.const 2)) (i32.const 1)))
                (v128.store (local.get $op) (v128.load offset=1 (local.get $ip)))
                (local.set $ip (i32.add (i32.add (local.get $ip) (local.get $length)) (i32.const 1)))
                (local.set $op (i32.add (local.get $op) (local.get $length)))
                (br $elements)))
            (if (i32.eq (i32.and (local.get $tag) (i32.const 3)) (i32.const 1))
              (then
                (local.set $offset (i32.or (i32.shl (i32.shr_u (local.get $tag) (i32.const 5)) (i32.const 8)) (i32.load8_u offset=1 (local.get $ip))))
                (if (i32.and (i32.ge_u (local.get $offset) (i32.const 16)) (i32.le_u (local.get $offset) (i32.sub (local.get $op) (local.get $out))))
                  (then
                    (v128.store (local.get $op) (v128.load (i32.sub (local.get $op) (local.get $offset))))
                    (local.set $ip (i32.add (local.get $ip) (i32.const 2)))
                    (local.set $op (i32.add (local.get $op) (i32.add (i32.and (i32.shr_u (local.get $tag) (i32.const 2)) (i32.const 7)) (i32.const 4))))
                    (br $elements))))
              (else
                (if (i32.and (i32.eq (i32.and (local.get $tag) (i32.const 3)) (i32.const 2)) (i32.lt_u (local.get $tag) (i32.const 64)))
                  (then
                    (local.set $offset (i32.load16_u offset=1 (local.get $ip)))
                    (if (i32.and (i32.ge_u (local.get $offset) (i32.const 16)) (i32.le_u (local.get $offset) (i32.sub (local.get $op) (local.get $out))))
                      (then
                        (v128.store (local.get $op) (v128.load (i32.sub (local.get $op) (local.get $offset))))
                        (local.set $ip (i32.add (local.get $ip) (i32.const 3)))
                        (local.set $op (i32.add (local.get $op) (i32.add (i32.shr_u (local.get $tag) (i32.const 2)) (i32.const 1))))
                        (br $elements)))))))))
        ;; The checked path: every element, each length and offset checked.
        (br_if $done (i32.ge_u (local.get $ip) (local.get $inEnd)))
        (local.set $tag (i32.load8_u (local.get $ip)))
        (local.set $ip (i32.add (local.get $ip) (i32.const 1)))
        (if (i32.eqz (i32.and (local.get $tag) (i32.const 3)))
          (then
            ;; A literal.
            (local.set $length (i32.add (i32.shr_u (local.get $tag) (i32.const 2)) (i32.const 1)))
            (if (i32.gt_u (local.get $length) (i32.const 60))
              (then
                (local.set $extra (i32.sub (local.get $length) (i32.const 60)))
                (if (i32.gt_u (local.get $extra) (i32.sub (local.get $inEnd) (local.get $ip))) (then (return (i32.const 3))))
                ;; 1-4 little-endian bytes: the 4 at the tag's end masked to `extra`
                ;; (the 16 bytes after the input make the read safe).
                (local.set $length
                  (i32.load (local.get $ip)))
                (if (i32.lt_u (local.get $extra) (i32.const 4))
                  (then
                    (local.set $length
                      (i32.and (local.get $length)
                        (i32.sub (i32.shl (i32.const 1) (i32.shl (local.get $extra) (i32.const 3))) (i32.const 1))))))
                (local.set $ip (i32.add (local.get $ip) (local.get $extra)))
                ;; length - 1 was stored: a length past 2^32 - 1 is past any output.
                (if (i32.eq (local.get $length) (i32.const -1)) (then (return (i32.const 4))))
                (local.set $length (i32.add (local.get $length) (i32.const 1)))))
            (if (i32.gt_u (local.get $length) (i32.sub (local.get $inEnd) (local.get $ip))) (then (return (i32.const 3))))
            (if (i32.gt_u (local.get $length) (i32.sub (local.get $outEnd) (local.get $op))) (then (return (i32.const 4))))
            (if (i32.le_u (local.get $length) (i32.const 16))
              (then
                ;; 16 bytes at once: the input's and the output's 16 spare bytes take what is past.
                (v128.store (local.get $op) (v128.load (local.get $ip))))
              (else
                (memory.copy (local.get $op) (local.get $ip) (local.get $length))))
            (local.set $ip (i32.add (local.get $ip) (local.get $length)))
            (local.set $op (i32.add (local.get $op) (local.get $length)))
            (br $elements)))
        ;; A copy: its length and offset.
        (if (i32.eq (i32.and (local.get $tag) (i32.const 3)) (i32.const 1))
          (then
            (if (i32.ge_u (local.get $ip) (local.get $inEnd)) (then (return (i32.const 3))))
            (local.set $length (i32.add (i32.and (i32.shr_u (local.get $tag) (i32.const 2)) (i32.const 7)) (i32.const 4)))
            (local.set $offset (i32.or (i32.shl (i32.shr_u (local.get $tag) (i32.const 5)) (i32.const 8)) (i32.load8_u (local.get $ip))))
            (local.set $ip (i32.add (local.get $ip) (i32.const 1))))
          (else
            (local.set $length (i32.add (i32.shr_u (local.get $tag) (i32.const 2)) (i32.const 1)))
            (if (i32.eq (i32.and (local.get $tag) (i32.const 3)) (i32.const 2))
              (then
                (if (i32.gt_u (i32.const 2) (i32.sub (local.get $inEnd) (local.get $ip))) (then (return (i32.const 3))))
                (local.set $offset (i32.load16_u (local.get $ip)))
                (local.set $ip (i32.add (local.get $ip) (i32.const 2))))
              (else
                (if (i32.gt_u (i32.const 4) (i32.sub (local.get $inEnd) (local.get $ip))) (then (return (i32.const 3))))
                (local.set $offset (i32.load (local.get $ip)))
                (local.set $ip (i32.add (local.get $ip) (i32.const 4)))))))
        (if (i32.gt_u (local.get $length) (i32.sub (local.get $outEnd) (local.get $op))) (then (return (i32.const 4))))
        (if (i32.or (i32.eqz (local.get $offset)) (i32.gt_u (local.get $offset) (i32.sub (local.get $op) (local.get $out)))) (then (return (i32.const 5))))
        (local.set $from (i32.sub (local.get $op) (local.get $offset)))
        (local.set $copyEnd (i32.add (local.get $op) (local.get $length)))
        ;; An offset under 16: 16 bytes from `from`, of which the first (op - from) are
        ;; right, and op moved on by that much, so the run of repeated bytes behind op
        ;; doubles, until it is 16 or more (each store is of bytes already read; the last
        ;; may write up to 15 past the copy, into what follows or the spare 16). A run of
        ;; whole repeats stands for the offset's bytes: copying from it is the same copy.
        (block $longRun
          (loop $doubling
            (br_if $longRun (i32.ge_u (i32.sub (local.get $op) (local.get $from)) (i32.const 16)))
            (v128.store (local.get $op) (v128.load (local.get $from)))
            (local.set $op (i32.add (local.get $op) (i32.sub (local.get $op) (local.get $from))))
            (br_if $doubling (i32.lt_u (local.get $op) (local.get $copyEnd)))))
        ;; 16 bytes at a time, each from at least 16 back, so of bytes already written; the
        ;; last may write up to 15 past the copy, into what follows or the spare 16.
        (local.set $from (i32.sub (local.get $op) (local.get $from)))
        (block $copied
          (loop $chunks
            (br_if $copied (i32.ge_u (local.get $op) (local.get $copyEnd)))
            (v128.store (local.get $op) (v128.load (i32.sub (local.get $op) (local.get $from))))
            (local.set $op (i32.add (local.get $op) (i32.const 16)))
            (br $chunks)))
        (local.set $op (local.get $copyEnd))
        (br $elements)))
    (if (i32.ne (local.get $op) (local.get $outEnd)) (then (return (i32.const 6))))
    (i32.const 0))
)
