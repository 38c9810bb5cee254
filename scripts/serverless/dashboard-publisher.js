'use strict';

// A local osls plugin: after `serverless deploy`, publish the built dashboard files to
// the stack's dashboard bucket (served by CloudFront), and empty that bucket before
// `serverless remove` so CloudFormation can delete it. `serverless publish-dashboard`
// republishes without a deploy.
//
// Plain CommonJS because osls loads plugins with require().

const { readdirSync, readFileSync, statSync } = require('node:fs');
const path = require('node:path');
const { DeleteObjectsCommand, ListObjectsV2Command, PutObjectCommand, S3Client } = require('@aws-sdk/client-s3');

/** Content types of the files a static dashboard ships; anything else is octet-stream. */
const CONTENT_TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

/** Every file under `root`, as paths relative to it with `/` separators. */
function listFiles(root, prefix = '') {
  return readdirSync(path.join(root, prefix), { withFileTypes: true }).flatMap((entry) => {
    const relative = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    return entry.isDirectory() ? listFiles(root, relative) : [relative];
  });
}

/** The CloudFormation client osls itself uses, resolved from osls's own dependencies. */
function describeStacksCommand(stackName) {
  const oslsDir = path.dirname(require.resolve('osls'));
  const { DescribeStacksCommand } = require(require.resolve('@aws-sdk/client-cloudformation', { paths: [oslsDir] }));
  return new DescribeStacksCommand({ StackName: stackName });
}

class DashboardPublisher {
  constructor(serverless, _options, { log }) {
    this.serverless = serverless;
    this.provider = serverless.getProvider('aws');
    this.log = log;
    this.commands = {
      'publish-dashboard': {
        usage: 'Upload the built dashboard files to the deployed stack',
        lifecycleEvents: ['publish'],
      },
    };
    this.hooks = {
      'before:deploy:deploy': () => this.assertBuilt(),
      'after:deploy:deploy': () => this.publish(),
      'publish-dashboard:publish': () => this.assertBuilt().then(() => this.publish()),
      'before:remove:remove': () => this.emptyBucket(),
    };
  }

  get directory() {
    const configured = this.serverless.service.custom?.dashboard?.directory ?? 'dist/dashboard';
    return path.resolve(this.serverless.serviceDir, configured);
  }

  async assertBuilt() {
    const index = path.join(this.directory, 'index.html');
    if (!statSync(index, { throwIfNoEntry: false })?.isFile()) {
      throw new this.serverless.classes.Error(`dashboard not built: ${index} is missing (run \`npm run build\` first)`);
    }
  }

  async s3() {
    this.s3Client ??= new S3Client(await this.provider.getAwsSdkV3Config());
    return this.s3Client;
  }

  async stackOutput(key) {
    const cloudFormation = await this.provider.getCloudFormationClient();
    const result = await cloudFormation.send(describeStacksCommand(this.provider.naming.getStackName()));
    const output = result.Stacks?.[0]?.Outputs?.find((candidate) => candidate.OutputKey === key);
    if (output?.OutputValue === undefined) {
      throw new this.serverless.classes.Error(`stack output ${key} not found`);
    }
    return output.OutputValue;
  }

  async existingKeys(bucket) {
    const s3 = await this.s3();
    const keys = [];
    let token;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
      keys.push(...(page.Contents ?? []).map((object) => object.Key));
      token = page.NextContinuationToken;
    } while (token);
    return keys;
  }

  async deleteKeys(bucket, keys) {
    const s3 = await this.s3();
    for (let start = 0; start < keys.length; start += 1000) {
      const batch = keys.slice(start, start + 1000).map((Key) => ({ Key }));
      await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: batch, Quiet: true } }));
    }
  }

  async publish() {
    const bucket = await this.stackOutput('DashboardBucketName');
    const files = listFiles(this.directory);
    const s3 = await this.s3();
    for (const file of files) {
      await s3.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: file,
          Body: readFileSync(path.join(this.directory, file)),
          ContentType: CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
          // Names are not content-hashed: browsers and CloudFront revalidate every time.
          CacheControl: 'no-cache',
        }),
      );
    }
    const stale = (await this.existingKeys(bucket)).filter((key) => !files.includes(key));
    await this.deleteKeys(bucket, stale);
    this.log.notice(`dashboard: ${files.length} files published to s3://${bucket} -> ${await this.stackOutput('DashboardUrl')}`);
  }

  async emptyBucket() {
    let bucket;
    try {
      bucket = await this.stackOutput('DashboardBucketName');
    } catch {
      return; // no stack or no output: nothing to empty
    }
    await this.deleteKeys(bucket, await this.existingKeys(bucket));
  }
}

module.exports = DashboardPublisher;
