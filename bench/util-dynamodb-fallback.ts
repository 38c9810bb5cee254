/**
 * Powertools' DynamoDB persistence layer requires `@aws-sdk/util-dynamodb` (which
 * `@aws-sdk/lib-dynamodb`, one of its optional peers, brings). This repository does not
 * install it, so when it cannot be resolved the benchmark points that one module name
 * at a small `marshall` / `unmarshall` covering the plain values Powertools stores
 * (strings, numbers, booleans, nested lists and maps). Import this module before
 * Powertools; with the real package installed it does nothing.
 */
import Module from 'node:module';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

type Plain = string | number | boolean | null | undefined | Uint8Array | Plain[] | { [key: string]: Plain };

function toAttribute(value: Plain): AttributeValue | undefined {
  if (value === undefined) return undefined;
  if (value === null) return { NULL: true };
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'number') return { N: String(value) };
  if (typeof value === 'boolean') return { BOOL: value };
  if (value instanceof Uint8Array) return { B: value };
  if (Array.isArray(value)) return { L: value.map((item) => toAttribute(item) ?? { NULL: true }) };
  return { M: marshall(value) };
}

/** Plain object to DynamoDB attribute values; `undefined` members are left out. */
export function marshall(data: Record<string, Plain>): Record<string, AttributeValue> {
  const item: Record<string, AttributeValue> = {};
  for (const [name, value] of Object.entries(data)) {
    const attribute = toAttribute(value);
    if (attribute !== undefined) item[name] = attribute;
  }
  return item;
}

function fromAttribute(value: AttributeValue): Plain {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return Number(value.N);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.NULL !== undefined) return null;
  if (value.B !== undefined) return value.B;
  if (value.L !== undefined) return value.L.map(fromAttribute);
  if (value.M !== undefined) return unmarshall(value.M);
  throw new Error(`util-dynamodb fallback: unsupported attribute value ${JSON.stringify(Object.keys(value))}`);
}

/** DynamoDB attribute values to a plain object. */
export function unmarshall(item: Record<string, AttributeValue>): Record<string, Plain> {
  return Object.fromEntries(Object.entries(item).map(([name, value]) => [name, fromAttribute(value)]));
}

const MODULE = '@aws-sdk/util-dynamodb';

function installFallback(): void {
  try {
    require.resolve(MODULE);
    return;
  } catch {
    // not installed: fall through
  }
  const loader = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
  const resolve = loader._resolveFilename;
  loader._resolveFilename = function resolveWithFallback(request: string, ...rest: unknown[]): string {
    return request === MODULE ? __filename : resolve.call(this, request, ...rest);
  };
}

installFallback();
