import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HEAD_BYTES, PUT_PART_BYTES, s3Etag } from '../../src/app/ingest/put-logs';
import { readLogFileContent } from '../../src/cli/commands/ingest/put-file';

/** tally put reads a file a part at a time: once for its name and ETag, again to send it, checking it is still what it counted. */
describe('a file as tally put reads it', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tally-put-file-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Bytes that differ from part to part. */
  const bytesOf = (length: number, seed: number) => Buffer.from(Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff));

  async function partsOf(content: { parts(): AsyncIterable<Uint8Array> }): Promise<Buffer[]> {
    const parts: Buffer[] = [];
    for await (const part of content.parts()) parts.push(Buffer.from(part));
    return parts;
  }

  it('is its parts of PUT_PART_BYTES, the last shorter, with their MD5s, its SHA-256 and its first bytes', async () => {
    const data = bytesOf(2 * PUT_PART_BYTES + 12_345, 7);
    const path = join(dir, 'big.log');
    writeFileSync(path, data);

    const content = await readLogFileContent(path, 'big.log');
    const parts = await partsOf(content);

    expect(parts.map((part) => part.length)).toEqual([PUT_PART_BYTES, PUT_PART_BYTES, 12_345]);
    expect(Buffer.concat(parts).equals(data)).toBe(true);
    expect(content.size).toBe(data.length);
    expect(content.sha256).toBe(createHash('sha256').update(data).digest('hex'));
    expect(content.partMd5s.map((md5) => Buffer.from(md5).toString('hex'))).toEqual(parts.map((part) => createHash('md5').update(part).digest('hex')));
    expect(Buffer.from(content.head).equals(data.subarray(0, HEAD_BYTES))).toBe(true);
    expect(s3Etag(content.partMd5s)).toMatch(/^[0-9a-f]{32}-3$/);
  });

  it('is one part, its ETag its MD5, when it is no longer than a part', async () => {
    const data = bytesOf(PUT_PART_BYTES, 3);
    const path = join(dir, 'one.log');
    writeFileSync(path, data);

    const content = await readLogFileContent(path, 'one.log');

    expect((await partsOf(content)).map((part) => part.length)).toEqual([PUT_PART_BYTES]);
    expect(s3Etag(content.partMd5s)).toBe(createHash('md5').update(data).digest('hex'));
  });

  it('fails when read again after it changed: other bytes of the same size, or more bytes (no part past its size is given)', async () => {
    const path = join(dir, 'moving.log');
    writeFileSync(path, bytesOf(PUT_PART_BYTES + 10, 1));
    const content = await readLogFileContent(path, 'moving.log');

    writeFileSync(path, bytesOf(PUT_PART_BYTES + 10, 2));
    await expect(partsOf(content)).rejects.toThrow(`file moving.log: changed since it was counted (${PUT_PART_BYTES + 10} bytes, was ${PUT_PART_BYTES + 10}): it was not put; put it again once it is written`);

    writeFileSync(path, bytesOf(PUT_PART_BYTES + 10, 1));
    appendFileSync(path, bytesOf(PUT_PART_BYTES, 5));
    const given: number[] = [];
    await expect(
      (async () => {
        for await (const part of content.parts()) given.push(part.length);
      })(),
    ).rejects.toThrow(`file moving.log: changed since it was counted (more than ${PUT_PART_BYTES + 10} bytes, was ${PUT_PART_BYTES + 10})`);
    expect(given).toEqual([PUT_PART_BYTES]);
  });
});
