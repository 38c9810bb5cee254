import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** An object as the emulator's S3 store holds it. */
export interface StoredObject {
  key: string;
  body: Buffer;
  contentType: string;
  contentLength: number;
  etag: string;
  lastModified: Date;
  metadata: Record<string, string>;
}

/** The methods of fauxqs's in-memory S3 store that change what it holds. */
export interface S3StoreLike {
  createBucket(name: string): void;
  deleteBucket(name: string): void;
  putObject(bucket: string, key: string, body: Buffer, contentType?: string, metadata?: Record<string, string>): StoredObject;
  deleteObject(bucket: string, key: string): void;
  createMultipartUpload(bucket: string, key: string, contentType?: string, metadata?: Record<string, string>): string;
  completeMultipartUpload(uploadId: string, parts: { partNumber: number; etag: string }[]): StoredObject;
  abortMultipartUpload(uploadId: string): void;
  emptyBucket(name: string): void;
  clearObjects(): void;
  purgeAll(): void;
}

export type S3StoreClass = new () => S3StoreLike;

/** What an object file starts with: one line of JSON, then the body's bytes. */
interface ObjectHeader {
  key: string;
  contentType: string;
  etag: string;
  lastModified: string;
  metadata: Record<string, string>;
}

/**
 * Extends fauxqs's in-memory S3 store so that buckets and objects survive a restart:
 * every change is written through to `dir` before the emulator answers the request,
 * and the constructor loads what is there. A log object a user fed in is therefore on
 * disk as soon as their PutObject succeeded, and a crash or `kill -9` of the stack
 * loses nothing acknowledged (the kernel holds the bytes; only a power cut could lose
 * the last writes, which are not fsynced). Snapshotting on stop would lose every object
 * since the last clean stop.
 *
 * Layout: `dir/<bucket>/<sha256 of the key>`, one file per object (a JSON header line,
 * then the body), written aside and renamed into place so a file is whole or absent.
 * The restored object keeps its ETag and Last-Modified, so a notification sent before
 * the restart still names the same object version.
 */
export function persistentS3Store(Base: S3StoreClass, dir: string): S3StoreLike {
  class PersistentS3Store extends Base {
    /** Which bucket an open multipart upload writes to (the store's completion is given only the upload id). */
    private readonly uploads = new Map<string, string>();

    constructor() {
      super();
      mkdirSync(dir, { recursive: true });
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (entry.isDirectory()) this.restoreBucket(bucketName(entry.name));
      }
    }

    private restoreBucket(bucket: string): void {
      super.createBucket(bucket);
      const folder = bucketDir(dir, bucket);
      for (const name of readdirSync(folder)) {
        const file = join(folder, name);
        if (name.endsWith('.tmp')) {
          unlinkSync(file); // a write the previous run did not finish: never acknowledged
          continue;
        }
        const content = readFileSync(file);
        const newline = content.indexOf(0x0a);
        const header = JSON.parse(content.subarray(0, newline).toString('utf8')) as ObjectHeader;
        const restored = super.putObject(bucket, header.key, content.subarray(newline + 1), header.contentType, header.metadata);
        restored.etag = header.etag;
        restored.lastModified = new Date(header.lastModified);
      }
    }

    override createBucket(name: string): void {
      super.createBucket(name);
      mkdirSync(bucketDir(dir, name), { recursive: true });
    }

    override deleteBucket(name: string): void {
      super.deleteBucket(name);
      rmSync(bucketDir(dir, name), { recursive: true, force: true });
    }

    override putObject(bucket: string, key: string, body: Buffer, contentType?: string, metadata?: Record<string, string>): StoredObject {
      const stored = super.putObject(bucket, key, body, contentType, metadata);
      writeObject(dir, bucket, stored);
      return stored;
    }

    override deleteObject(bucket: string, key: string): void {
      super.deleteObject(bucket, key);
      rmSync(objectFile(dir, bucket, key), { force: true });
    }

    override createMultipartUpload(bucket: string, key: string, contentType?: string, metadata?: Record<string, string>): string {
      const uploadId = super.createMultipartUpload(bucket, key, contentType, metadata);
      this.uploads.set(uploadId, bucket);
      return uploadId;
    }

    override completeMultipartUpload(uploadId: string, parts: { partNumber: number; etag: string }[]): StoredObject {
      const stored = super.completeMultipartUpload(uploadId, parts);
      const bucket = this.uploads.get(uploadId);
      this.uploads.delete(uploadId);
      if (bucket !== undefined) writeObject(dir, bucket, stored);
      return stored;
    }

    override abortMultipartUpload(uploadId: string): void {
      super.abortMultipartUpload(uploadId);
      this.uploads.delete(uploadId);
    }

    override emptyBucket(name: string): void {
      super.emptyBucket(name);
      rmSync(bucketDir(dir, name), { recursive: true, force: true });
      mkdirSync(bucketDir(dir, name), { recursive: true });
      for (const [uploadId, bucket] of this.uploads) if (bucket === name) this.uploads.delete(uploadId);
    }

    override clearObjects(): void {
      super.clearObjects();
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (entry.isDirectory()) this.emptyBucket(bucketName(entry.name));
      }
      this.uploads.clear();
    }

    override purgeAll(): void {
      super.purgeAll();
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      this.uploads.clear();
    }
  }
  return new PersistentS3Store();
}

/** A bucket's folder: its name made safe as one path segment (no separators, never `.` or `..`). */
function bucketDir(dir: string, bucket: string): string {
  return join(dir, encodeURIComponent(bucket).replace(/^\./, '%2E'));
}

function bucketName(folder: string): string {
  return decodeURIComponent(folder);
}

/** Keys may be 1,024 bytes and hold any character: the file is named by the key's hash, the key is in the header. */
function objectFile(dir: string, bucket: string, key: string): string {
  return join(bucketDir(dir, bucket), createHash('sha256').update(key).digest('hex'));
}

function writeObject(dir: string, bucket: string, stored: StoredObject): void {
  const header: ObjectHeader = {
    key: stored.key,
    contentType: stored.contentType,
    etag: stored.etag,
    lastModified: stored.lastModified.toISOString(),
    metadata: stored.metadata,
  };
  const file = objectFile(dir, bucket, stored.key);
  mkdirSync(bucketDir(dir, bucket), { recursive: true });
  writeFileSync(`${file}.tmp`, Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), stored.body]));
  renameSync(`${file}.tmp`, file);
}
