import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { LOCAL_CREDENTIALS } from '../../src/local/local-credentials';
import { testClients, testStackInfo, uniqueId } from '../support/stack';

/** The local osls plugin, driven here as osls drives it: hooks by lifecycle event name. */
interface Publisher {
  hooks: Record<string, () => Promise<void>>;
  commands: Record<string, unknown>;
}
// Plain CommonJS (osls require()s it), so no types to import.
const DashboardPublisher = require('../../scripts/serverless/dashboard-publisher.js') as new (
  serverless: unknown,
  options: unknown,
  utils: { log: { notice: (message: string) => void } },
) => Publisher;

class ServerlessError extends Error {}

/**
 * A stand-in for what osls hands the plugin: the provider's SDK configuration (pointed
 * at the S3 emulator) and a CloudFormation client answering with the stack's outputs.
 * The emulator keeps no Cache-Control, so the PutObject requests are recorded on the way.
 */
function publisherFor(directory: string, outputs: Record<string, string>) {
  const info = testStackInfo();
  const notices: string[] = [];
  const stackNames: string[] = [];
  const cacheControl: Record<string, string | undefined> = {};
  const http = new NodeHttpHandler();
  const requestHandler = {
    handle: (request: { method: string; path: string; headers: Record<string, string> }, options?: object) => {
      if (request.method === 'PUT') cacheControl[decodeURIComponent(request.path).split('/').slice(2).join('/')] = request.headers['cache-control'];
      return http.handle(request as Parameters<NodeHttpHandler['handle']>[0], options);
    },
  };
  const serverless = {
    serviceDir: path.dirname(directory),
    service: { custom: { dashboard: { directory: path.basename(directory) } } },
    classes: { Error: ServerlessError },
    getProvider: () => ({
      naming: { getStackName: () => 'tally-test' },
      getAwsSdkV3Config: async () => ({
        region: info.region,
        credentials: LOCAL_CREDENTIALS,
        endpoint: info.endpoints.s3,
        forcePathStyle: true,
        requestHandler,
      }),
      getCloudFormationClient: async () => ({
        send: async (command: { input: { StackName: string } }) => {
          stackNames.push(command.input.StackName);
          return { Stacks: [{ Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })) }] };
        },
      }),
    }),
  };
  const publisher = new DashboardPublisher(serverless, {}, { log: { notice: (message) => notices.push(message) } });
  return { publisher, notices, stackNames, cacheControl };
}

async function objectsIn(bucket: string): Promise<Record<string, { contentType?: string; body: string }>> {
  const { s3 } = testClients();
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
  const objects: Record<string, { contentType?: string; body: string }> = {};
  for (const { Key } of listed.Contents ?? []) {
    const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: Key! }));
    objects[Key!] = {
      ...(object.ContentType === undefined ? {} : { contentType: object.ContentType }),
      body: await object.Body!.transformToString(),
    };
  }
  return objects;
}

describe('dashboard publisher (local osls plugin)', () => {
  let root: string;
  let built: string;
  let bucket: string;

  beforeEach(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'tally-dashboard-'));
    built = path.join(root, 'dashboard');
    // The built layout: the page, its ES modules, the compiled lib/ and vendor/.
    mkdirSync(path.join(built, 'vendor'), { recursive: true });
    mkdirSync(path.join(built, 'lib'), { recursive: true });
    writeFileSync(path.join(built, 'index.html'), '<!doctype html><title>Tally</title><script type="module" src="main.js"></script>');
    writeFileSync(path.join(built, 'main.js'), "import { humanBytes } from './lib/format.js';");
    writeFileSync(path.join(built, 'lib', 'format.js'), 'export const humanBytes = (n) => `${n} B`;');
    writeFileSync(path.join(built, 'vendor', 'uPlot.min.css'), '.u{}');
    bucket = uniqueId('dashboard').toLowerCase();
    await testClients().s3.send(new CreateBucketCommand({ Bucket: bucket }));
  });

  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('publishes every built file, modules in their folders, with its content type after a deploy, and drops stale ones', async () => {
    await testClients().s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'old.js', Body: 'stale' }));
    const { publisher, notices, stackNames, cacheControl } = publisherFor(built, {
      DashboardBucketName: bucket,
      DashboardUrl: 'https://d111111abcdef8.cloudfront.net',
    });

    await publisher.hooks['before:deploy:deploy']!();
    await publisher.hooks['after:deploy:deploy']!();

    expect(await objectsIn(bucket)).toEqual({
      'index.html': { contentType: 'text/html; charset=utf-8', body: '<!doctype html><title>Tally</title><script type="module" src="main.js"></script>' },
      'main.js': { contentType: 'text/javascript; charset=utf-8', body: "import { humanBytes } from './lib/format.js';" },
      'lib/format.js': { contentType: 'text/javascript; charset=utf-8', body: 'export const humanBytes = (n) => `${n} B`;' },
      'vendor/uPlot.min.css': { contentType: 'text/css; charset=utf-8', body: '.u{}' },
    });
    // Names are not content-hashed, so every file must be revalidated.
    expect(cacheControl).toEqual({ 'index.html': 'no-cache', 'main.js': 'no-cache', 'lib/format.js': 'no-cache', 'vendor/uPlot.min.css': 'no-cache' });
    expect(new Set(stackNames)).toEqual(new Set(['tally-test']));
    expect(notices).toEqual([`dashboard: 4 files published to s3://${bucket} -> https://d111111abcdef8.cloudfront.net`]);
  });

  it('stops a deploy before it starts when the dashboard is not built', async () => {
    rmSync(path.join(built, 'index.html'));
    const { publisher } = publisherFor(built, { DashboardBucketName: bucket });

    await expect(publisher.hooks['before:deploy:deploy']!()).rejects.toThrow(/dashboard not built: .*index\.html is missing/);
  });

  it('empties the dashboard bucket before the stack is removed', async () => {
    const { publisher } = publisherFor(built, { DashboardBucketName: bucket, DashboardUrl: 'https://example.cloudfront.net' });
    await publisher.hooks['publish-dashboard:publish']!();
    expect(Object.keys(await objectsIn(bucket))).toHaveLength(4);

    await publisher.hooks['before:remove:remove']!();

    expect(await objectsIn(bucket)).toEqual({});
    expect(Object.keys(publisher.commands)).toEqual(['publish-dashboard']);
  });
});
