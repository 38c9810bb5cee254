import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/** The largest local stack description (`.tally/local.json`, `--stack`) read: `npm start` writes about 2 KB. */
export const MAX_STACK_FILE_BYTES = 1024 * 1024;

/**
 * Reads a small text file a setting names (a host map, a local stack description),
 * refusing, before any byte is read, what is no such file: a folder, a device such as
 * /dev/zero or /dev/urandom (endless bytes: the read would never end and fill memory), a
 * pipe (the read would wait for a writer) or a socket, and a file over `maxBytes`.
 *
 * The file is opened without blocking (`O_NONBLOCK`: opening a FIFO with no writer
 * returns at once instead of hanging) and checked with `fstat` on the open descriptor,
 * so what is checked is what is read. Throws an `Error` whose message says what the
 * path is; callers wrap it with the setting's name.
 */
export function readSmallTextFile(path: string, maxBytes: number): string {
  const descriptor = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = fstatSync(descriptor);
    if (stats.isDirectory()) throw new Error(`${path} is a folder, not a file`);
    if (!stats.isFile()) throw new Error(`${path} is a device, pipe or socket, not a file`);
    if (stats.size > maxBytes) {
      throw new Error(`${path} is ${stats.size.toLocaleString('en-US')} bytes; at most ${maxBytes.toLocaleString('en-US')} are read`);
    }
    // One byte more than fstat said: a file that grew since is refused, not cut short.
    const buffer = Buffer.alloc(Math.min(stats.size, maxBytes) + 1);
    let length = 0;
    while (length < buffer.length) {
      const read = readSync(descriptor, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
    }
    if (length > stats.size) throw new Error(`${path} grew while it was read; try again`);
    return buffer.toString('utf8', 0, length);
  } finally {
    closeSync(descriptor);
  }
}
