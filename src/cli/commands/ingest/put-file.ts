import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { HEAD_BYTES, PUT_PART_BYTES, type LogFileContent } from '../../../app/ingest/put-logs';
import { ValidationError } from '../../../domain/errors';
import { printable } from '../../../domain/printable';

/**
 * Reads the file at `path` once, a part of {@link PUT_PART_BYTES} at a time, for what
 * `tally put` names and foresees it by (its size, SHA-256, the MD5 of each part, its
 * first bytes), and gives it back to be read again, part by part, when it is put: never
 * more than a part of it in memory. The second reading checks that the file is still the
 * content the first one hashed (a file that changed in between fails, before its object
 * is made: see LogBody.parts).
 */
export async function readLogFileContent(path: string, name: string): Promise<LogFileContent> {
  const sha256 = createHash('sha256');
  const partMd5s: Uint8Array[] = [];
  let size = 0;
  let head = new Uint8Array(0);
  for await (const part of fileParts(path)) {
    if (size === 0) head = Buffer.from(part.subarray(0, HEAD_BYTES));
    sha256.update(part);
    partMd5s.push(createHash('md5').update(part).digest());
    size += part.length;
  }
  const digest = sha256.digest('hex');
  return {
    size,
    sha256: digest,
    partMd5s,
    head,
    async *parts() {
      const again = createHash('sha256');
      let read = 0;
      for await (const part of fileParts(path)) {
        again.update(part);
        read += part.length;
        // A file that grew is stopped here, before more of it is read.
        if (read > size) break;
        yield part;
      }
      if (read !== size || again.digest('hex') !== digest) {
        throw new ValidationError(`file ${printable(name, 200)}: changed since it was counted (${read > size ? `more than ${size}` : read} bytes, was ${size}): it was not put; put it again once it is written`);
      }
    },
  };
}

/** The file's bytes in parts of {@link PUT_PART_BYTES} (the last shorter), each a buffer of its own. */
async function* fileParts(path: string): AsyncGenerator<Buffer> {
  const file = await open(path, 'r');
  try {
    for (;;) {
      const part = Buffer.allocUnsafe(PUT_PART_BYTES);
      let filled = 0;
      while (filled < part.length) {
        const { bytesRead } = await file.read(part, filled, part.length - filled, null);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      if (filled > 0) yield part.subarray(0, filled);
      if (filled < part.length) return;
    }
  } finally {
    await file.close();
  }
}
