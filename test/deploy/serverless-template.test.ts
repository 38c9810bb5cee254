import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULTS, readConfig } from '../../src/adapters/config';
import tableDefinition from '../../src/adapters/usage-table-definition.json';
import { readUsageApiConfig } from '../../src/adapters/usage-api-config';
import { readStripeConfig, STRIPE_SERVICE } from '../../src/adapters/stripe-config';
import { redeliveryGaps } from '../../src/domain/redelivery';
import type { AwsClients } from '../../src/adapters/clients';
import { ingestBatch } from '../../src/app/ingest';
import { crashAfterUpdates } from '../support/faults';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { usageKey } from '../../src/domain/keys';
import { putLogObject, s3NotificationMessage, testClients, testIngestDeps, testStackInfo, uniqueId } from '../support/stack';
import {
  asList,
  packageStack,
  policyDocuments,
  removePackage,
  resourcesOfType,
  stringsIn,
  type PackagedStack,
  type PolicyStatement,
  type Resource,
  type Template,
} from './cloudformation';

const CUSTOMER_KEY = 'arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';
// A PEM passed as a param has its line breaks written as \n, as docs/deployment.md shows.
const PUBLIC_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  .publicKey.export({ type: 'spki', format: 'pem' })
  .toString()
  .trim()
  .replace(/\n/g, '\\n');

const PATH_RESOLVER = 'path:^/t/(?<account>[^/]+)/';
const METRICS = '[{"name":"authorization_requests","path":"/api/authorization/*"}]';
const STRIPE_METERS = '{"requests":"cdn_requests","bytes":"cdn_bytes"}';

// `serverless package` (osls) runs three times, offline, before any test:
//  - prod: defaults; the stack creates its log bucket; data is protected;
//  - dev: an existing log bucket, a customer managed key on the signing secret, CORS
//    origins, an alarm e-mail, a path resolver, a metric rule, a webhook URL and Stripe meters; data is
//    not protected;
//  - staging: tokens verified with a public key instead of the SSM secret.
let prod: PackagedStack | undefined;
let dev: PackagedStack | undefined;
let staging: PackagedStack | undefined;

beforeAll(async () => {
  [prod, dev, staging] = await Promise.all([
    packageStack(['--stage', 'prod']),
    packageStack([
      '--stage',
      'dev',
      '--param',
      'existingLogBucket=acme-cdn-logs',
      '--param',
      'logPrefix=edge/',
      '--param',
      `jwtSecretKmsKeyArn=${CUSTOMER_KEY}`,
      '--param',
      'corsOrigins=https://portal.example.com,http://localhost:8080',
      '--param',
      'alarmEmail=oncall@example.com',
      '--param',
      `resolver=${PATH_RESOLVER}`,
      '--param',
      `metrics=${METRICS}`,
      '--param',
      'webhookUrl=https://billing.example.com/hooks/tally',
      '--param',
      `stripeMeters=${STRIPE_METERS}`,
    ]),
    packageStack(['--stage', 'staging', '--param', `jwtPublicKey=${PUBLIC_KEY}`]),
  ]);
}, 180_000);

afterAll(() => {
  for (const stack of [prod, dev, staging]) removePackage(stack);
});
const getAtt = (id: string, attribute = 'Arn') => ({ 'Fn::GetAtt': [id, attribute] });
const ref = (id: string) => ({ Ref: id });

function template(stack: PackagedStack | undefined): Template {
  if (stack === undefined) throw new Error('packaging did not run');
  return stack.effective;
}

function resource(t: Template, id: string, type: string): Resource {
  const found = t.Resources[id];
  expect(found?.Type).toBe(type);
  return found!;
}

function statementsOf(t: Template, roleId: string): PolicyStatement[] {
  const role = resource(t, roleId, 'AWS::IAM::Role');
  expect(role.Properties.Policies).toHaveLength(1);
  expect(role.Properties.ManagedPolicyArns).toBeUndefined();
  return role.Properties.Policies[0].PolicyDocument.Statement;
}

describe('serverless package (offline)', () => {
  it('writes the template and one bundle per function without AWS credentials', () => {
    expect([...prod!.files].sort()).toEqual([
      'closer.zip',
      'cloudformation-template-create-stack.json',
      'cloudformation-template-update-stack.json',
      'ingest.zip',
      'serverless-state.json',
      'stripeSender.zip',
      'thresholds.zip',
      'usageApi.zip',
      'webhookSender.zip',
    ]);
  });

  it('is what `npm run package` and `npm run deploy` run', () => {
    const { scripts } = JSON.parse(readFileSync(path.join(__dirname, '../../package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(scripts.package).toBe('serverless package');
    expect(scripts.deploy).toBe('node scripts/build.mjs && serverless deploy');
  });

  it('creates exactly the stack described in docs/deployment.md', () => {
    const types = Object.fromEntries(Object.entries(template(prod).Resources).map(([id, r]) => [id, r.Type]));
    expect(types).toEqual({
      ServerlessDeploymentBucket: 'AWS::S3::Bucket',
      ServerlessDeploymentBucketPolicy: 'AWS::S3::BucketPolicy',
      IngestLogGroup: 'AWS::Logs::LogGroup',
      UsageApiLogGroup: 'AWS::Logs::LogGroup',
      HttpApiLogGroup: 'AWS::Logs::LogGroup',
      IngestLambdaFunction: 'AWS::Lambda::Function',
      UsageApiLambdaFunction: 'AWS::Lambda::Function',
      IngestEventSourceMappingSQSIngestQueue: 'AWS::Lambda::EventSourceMapping',
      HttpApi: 'AWS::ApiGatewayV2::Api',
      HttpApiStage: 'AWS::ApiGatewayV2::Stage',
      HttpApiIntegrationUsageApi: 'AWS::ApiGatewayV2::Integration',
      HttpApiRouteGetV1AccountsAccountidVarUsage: 'AWS::ApiGatewayV2::Route',
      HttpApiRouteGetV1AccountsAccountidVarDaysDayVarExplain: 'AWS::ApiGatewayV2::Route',
      HttpApiRouteGetV1Health: 'AWS::ApiGatewayV2::Route',
      UsageApiLambdaPermissionHttpApi: 'AWS::Lambda::Permission',
      UsageTable: 'AWS::DynamoDB::Table',
      IngestQueue: 'AWS::SQS::Queue',
      IngestDeadLetterQueue: 'AWS::SQS::Queue',
      IngestQueuePolicy: 'AWS::SQS::QueuePolicy',
      LogBucket: 'AWS::S3::Bucket',
      IngestRole: 'AWS::IAM::Role',
      UsageApiRole: 'AWS::IAM::Role',
      DashboardBucket: 'AWS::S3::Bucket',
      DashboardBucketPolicy: 'AWS::S3::BucketPolicy',
      DashboardOriginAccessControl: 'AWS::CloudFront::OriginAccessControl',
      DashboardDistribution: 'AWS::CloudFront::Distribution',
      DashboardResponseHeadersPolicy: 'AWS::CloudFront::ResponseHeadersPolicy',
      AlarmTopic: 'AWS::SNS::Topic',
      DeadLetterQueueDepthAlarm: 'AWS::CloudWatch::Alarm',
      IngestQueueAgeAlarm: 'AWS::CloudWatch::Alarm',
      UnresolvedIncrementsAlarm: 'AWS::CloudWatch::Alarm',
      IngestErrorsAlarm: 'AWS::CloudWatch::Alarm',
      IngestThrottlesAlarm: 'AWS::CloudWatch::Alarm',
      UsageApiErrorsAlarm: 'AWS::CloudWatch::Alarm',
      UsageApiThrottlesAlarm: 'AWS::CloudWatch::Alarm',
      UsageTableThrottlesAlarm: 'AWS::CloudWatch::Alarm',
      CloserLogGroup: 'AWS::Logs::LogGroup',
      CloserLambdaFunction: 'AWS::Lambda::Function',
      CloserRole: 'AWS::IAM::Role',
      CloserEventsRuleSchedule1: 'AWS::Events::Rule',
      CloserLambdaPermissionEventsRuleSchedule1: 'AWS::Lambda::Permission',
      CloserErrorsAlarm: 'AWS::CloudWatch::Alarm',
      WebhookSenderLogGroup: 'AWS::Logs::LogGroup',
      WebhookSenderLambdaFunction: 'AWS::Lambda::Function',
      WebhookSenderRole: 'AWS::IAM::Role',
      WebhookSenderEventSourceMappingSQSWebhookQueue: 'AWS::Lambda::EventSourceMapping',
      WebhookSenderErrorsAlarm: 'AWS::CloudWatch::Alarm',
      ThresholdsLogGroup: 'AWS::Logs::LogGroup',
      ThresholdsLambdaFunction: 'AWS::Lambda::Function',
      ThresholdsRole: 'AWS::IAM::Role',
      ThresholdsEventsRuleSchedule1: 'AWS::Events::Rule',
      ThresholdsLambdaPermissionEventsRuleSchedule1: 'AWS::Lambda::Permission',
      ThresholdsErrorsAlarm: 'AWS::CloudWatch::Alarm',
      HttpApiRouteGetV1AccountsAccountidVarQuota: 'AWS::ApiGatewayV2::Route',
      HttpApiRouteGetV1Accounts: 'AWS::ApiGatewayV2::Route',
      WebhookQueue: 'AWS::SQS::Queue',
      WebhookDeadLetterQueue: 'AWS::SQS::Queue',
      WebhookDeadLetterQueueDepthAlarm: 'AWS::CloudWatch::Alarm',
      WebhookBacklogAlarm: 'AWS::CloudWatch::Alarm',
      StripeSenderLogGroup: 'AWS::Logs::LogGroup',
      StripeSenderLambdaFunction: 'AWS::Lambda::Function',
      StripeSenderRole: 'AWS::IAM::Role',
      StripeSenderEventSourceMappingSQSStripeQueue: 'AWS::Lambda::EventSourceMapping',
      StripeSenderErrorsAlarm: 'AWS::CloudWatch::Alarm',
      StripeEventsRefusedAlarm: 'AWS::CloudWatch::Alarm',
      StripeLateUsageAlarm: 'AWS::CloudWatch::Alarm',
      StripeSenderEventsRuleSchedule1: 'AWS::Events::Rule',
      StripeSenderLambdaPermissionEventsRuleSchedule1: 'AWS::Lambda::Permission',
      StripeQueue: 'AWS::SQS::Queue',
      StripeDeadLetterQueue: 'AWS::SQS::Queue',
      StripeDeadLetterQueueDepthAlarm: 'AWS::CloudWatch::Alarm',
      StripeBacklogAlarm: 'AWS::CloudWatch::Alarm',
    });
  });
});

describe('stage params', () => {
  it('are documented in docs/deployment.md, each with the default serverless package resolves', () => {
    const state = JSON.parse(readFileSync(path.join(prod!.directory, 'serverless-state.json'), 'utf8')) as {
      service: { initialServerlessConfig: { params: { default: Record<string, unknown>; dev: Record<string, unknown> } } };
    };
    const params = state.service.initialServerlessConfig.params;
    const page = readFileSync(path.join(__dirname, '../../docs/deployment.md'), 'utf8');
    const table = page.slice(page.indexOf('| param | default | meaning |'));
    const rows = [...table.matchAll(/^\| `([a-zA-Z]+)` \| ([^|]*) \|/gm)].map((m) => [m[1]!, m[2]!.trim()] as const);
    // `value` as shown, `<stage>` standing for the stage; "(empty...)" for ''.
    const shown = Object.fromEntries(rows.map(([name, cell]) => [name, cell.startsWith('(') ? '' : /^`([^`]*)`/.exec(cell)![1]!.replace('<stage>', 'prod')]));
    const resolved = Object.fromEntries(Object.entries(params.default).map(([name, value]) => [name, String(value)]));
    expect(shown).toEqual(resolved);
    expect(params.dev).toEqual({ protectData: false });
    expect(rows.find(([name]) => name === 'protectData')![1]).toContain('`false` for `dev`');
  });
});

describe('functions', () => {
  it('run on nodejs22.x (arm64), each with a role of its own', () => {
    const functions = resourcesOfType(template(prod), 'AWS::Lambda::Function');
    expect(Object.keys(functions).sort()).toEqual(['CloserLambdaFunction', 'IngestLambdaFunction', 'StripeSenderLambdaFunction', 'ThresholdsLambdaFunction', 'UsageApiLambdaFunction', 'WebhookSenderLambdaFunction']);
    for (const fn of Object.values(functions)) {
      expect(fn.Properties.Runtime).toBe('nodejs22.x');
      expect(fn.Properties.Architectures).toEqual(['arm64']);
    }
    expect(functions.IngestLambdaFunction!.Properties).toMatchObject({
      Handler: 'handlers/ingest.handler',
      Role: getAtt('IngestRole'),
      Timeout: 300,
      MemorySize: 1024,
    });
    expect(functions.UsageApiLambdaFunction!.Properties).toMatchObject({
      Handler: 'handlers/usage-api.handler',
      Role: getAtt('UsageApiRole'),
      Timeout: 10,
    });
    // osls generates no shared role when every function names its own.
    expect(Object.keys(resourcesOfType(template(prod), 'AWS::IAM::Role')).sort()).toEqual(['CloserRole', 'IngestRole', 'StripeSenderRole', 'ThresholdsRole', 'UsageApiRole', 'WebhookSenderRole']);
  });

  it('configure ingest through the variables readConfig validates', () => {
    const env = resource(template(prod), 'IngestLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables;
    expect(env).toEqual({
      NODE_OPTIONS: '--enable-source-maps',
      LOG_LEVEL: 'info',
      TALLY_TABLE: ref('UsageTable'),
      TALLY_RESOLVER: 'host-label',
      TALLY_METRICS: '[]',
      TALLY_SHARDS: '4',
      TALLY_HISTORY_CAP: '48',
      TALLY_MAX_RECEIVE_COUNT: '5',
      TALLY_LEDGER_TTL_DAYS: '400',
      TALLY_CLOSE_GRACE_HOURS: '48',
      TALLY_INGEST_QUEUE_URL: ref('IngestQueue'),
      TALLY_VISIBILITY_TIMEOUT: '360',
      TALLY_HEARTBEAT_SECONDS: '60',
    });
  });

  it('give the usage API the name of its signing secret, never the secret', () => {
    const env = resource(template(prod), 'UsageApiLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables;
    expect(env).toEqual({
      NODE_OPTIONS: '--enable-source-maps',
      LOG_LEVEL: 'info',
      TALLY_TABLE: ref('UsageTable'),
      TALLY_METRICS: '[]',
      TALLY_JWT_SECRET_PARAMETER: '/tally/prod/jwt-secret',
      TALLY_JWT_AUDIENCE: 'tally-usage-api',
      TALLY_JWT_ISSUER: 'tally',
      TALLY_CORS_ORIGIN: '',
      TALLY_QUOTAS: '',
      TALLY_QUOTA_LEVELS: '80,100',
      TALLY_DLQ_URL: ref('IngestDeadLetterQueue'),
    });
    const secretLike = Object.keys(env).filter((name) => /SECRET|KEY|TOKEN|PASSWORD/.test(name));
    expect(secretLike).toEqual(['TALLY_JWT_SECRET_PARAMETER']);
  });

  it('give the usage API a public key instead, when one is configured', () => {
    const env = resource(template(staging), 'UsageApiLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables;
    expect(env.TALLY_JWT_PUBLIC_KEY).toBe(PUBLIC_KEY);
    expect(env.TALLY_JWT_SECRET_PARAMETER).toBeUndefined();
  });

  it.each([
    ['prod', () => template(prod), 'secret-parameter'],
    ['staging', () => template(staging), 'public-key'],
  ])('pass an environment the handlers accept (%s)', (_stage, read, keyKind) => {
    const deployed = (id: string) => {
      const variables = resource(read(), id, 'AWS::Lambda::Function').Properties.Environment.Variables as Record<string, unknown>;
      // What CloudFormation puts in place of the references.
      const values: Record<string, string> = {
        UsageTable: 'tally-prod-usage',
        IngestQueue: 'https://sqs.us-east-1.amazonaws.com/123456789012/tally-prod-ingest',
      };
      return Object.fromEntries(
        Object.entries(variables).map(([name, value]) => [name, typeof value === 'string' ? value : values[(value as { Ref: string }).Ref]]),
      );
    };
    const ingest = readConfig(deployed('IngestLambdaFunction'));
    expect(ingest).toMatchObject({
      tableName: 'tally-prod-usage',
      keyScheme: { shards: 4, keyBytes: 12 },
      historyCap: 48,
      ledgerTtlDays: 400,
      visibilityTimeoutSeconds: 360,
      heartbeatSeconds: 60,
      ingestQueueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/tally-prod-ingest',
      endpoints: {},
    });
    const api = readUsageApiConfig(deployed('UsageApiLambdaFunction'));
    expect(api.jwt.key.kind).toBe(keyKind);
    expect(api.tally.tableName).toBe('tally-prod-usage');
    expect(api.corsOrigins).toEqual([]);
  });

  it('pass resolver and metric rules given as params through unchanged', () => {
    const env = resource(template(dev), 'IngestLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables;
    expect(env.TALLY_RESOLVER).toBe(PATH_RESOLVER);
    expect(env.TALLY_METRICS).toBe(METRICS);
    const config = readConfig({ ...env, TALLY_TABLE: 'tally-dev-usage', TALLY_INGEST_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/1/q' });
    expect(config.metricRules.map((rule) => rule.name)).toEqual(['authorization_requests']);
    expect(config.resolver).toMatchObject({ kind: 'path' });
  });

  it('give the usage API the metric rules too, so a metric has its column in every range', () => {
    const env = resource(template(dev), 'UsageApiLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables;
    expect(env.TALLY_METRICS).toBe(METRICS);
    const api = readUsageApiConfig({
      ...env,
      TALLY_TABLE: 'tally-dev-usage',
      TALLY_JWT_SECRET_PARAMETER: '/tally/dev/jwt-secret',
      TALLY_DLQ_URL: 'https://sqs.us-east-1.amazonaws.com/1/tally-dev-ingest-dlq',
    });
    expect(api.tally.metricRules.map((rule) => rule.name)).toEqual(['authorization_requests']);
  });

  it('deploy with exactly the defaults the code applies to an empty environment', () => {
    const ingest = resource(template(prod), 'IngestLambdaFunction', 'AWS::Lambda::Function').Properties;
    const where = { TALLY_TABLE: 'tally-prod-usage', TALLY_INGEST_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/1/tally-prod-ingest' };
    const deployed = readConfig({ ...ingest.Environment.Variables, ...where });
    // Only the visibility while a message is worked on is the stack's own: timeout + one heartbeat.
    expect(deployed).toEqual({ ...readConfig(where), visibilityTimeoutSeconds: ingest.Timeout + DEFAULTS.heartbeatSeconds });
  });

  it('re-arm a message for the ingest timeout plus one heartbeat, derived from both', () => {
    const ingest = resource(template(prod), 'IngestLambdaFunction', 'AWS::Lambda::Function').Properties;
    const env = ingest.Environment.Variables;
    expect(env.TALLY_HEARTBEAT_SECONDS).toBe(String(DEFAULTS.heartbeatSeconds));
    expect(env.TALLY_VISIBILITY_TIMEOUT).toBe(String(ingest.Timeout + DEFAULTS.heartbeatSeconds));
  });

  it('keep their logs for 30 days', () => {
    const groups = resourcesOfType(template(prod), 'AWS::Logs::LogGroup');
    expect(Object.keys(groups).sort()).toEqual(['CloserLogGroup', 'HttpApiLogGroup', 'IngestLogGroup', 'StripeSenderLogGroup', 'ThresholdsLogGroup', 'UsageApiLogGroup', 'WebhookSenderLogGroup']);
    for (const group of Object.values(groups)) expect(group.Properties.RetentionInDays).toBe(30);
    expect(groups.IngestLogGroup!.Properties.LogGroupName).toBe('/aws/lambda/tally-prod-ingest');
    expect(groups.UsageApiLogGroup!.Properties.LogGroupName).toBe('/aws/lambda/tally-prod-usageApi');
  });
});

describe('ingest queue', () => {
  it('feeds ingest in batches, reporting item failures, with bounded concurrency', () => {
    const mapping = resource(template(prod), 'IngestEventSourceMappingSQSIngestQueue', 'AWS::Lambda::EventSourceMapping');
    expect(mapping.Properties).toEqual({
      EventSourceArn: getAtt('IngestQueue'),
      FunctionName: getAtt('IngestLambdaFunction'),
      BatchSize: 10,
      MaximumBatchingWindowInSeconds: 5,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 10 },
      Enabled: true,
    });
  });

  it('hides a message for at least six ingest timeouts and dead-letters it after 5 receives', () => {
    const t = template(prod);
    const queue = resource(t, 'IngestQueue', 'AWS::SQS::Queue').Properties;
    const timeout = resource(t, 'IngestLambdaFunction', 'AWS::Lambda::Function').Properties.Timeout as number;
    expect(queue.VisibilityTimeout).toBeGreaterThanOrEqual(6 * timeout);
    expect(queue).toEqual({
      QueueName: 'tally-prod-ingest',
      VisibilityTimeout: 1800,
      MessageRetentionPeriod: 1_209_600,
      SqsManagedSseEnabled: true,
      RedrivePolicy: { deadLetterTargetArn: getAtt('IngestDeadLetterQueue'), maxReceiveCount: 5 },
    });
    expect(resource(t, 'IngestDeadLetterQueue', 'AWS::SQS::Queue').Properties).toEqual({
      QueueName: 'tally-prod-ingest-dlq',
      MessageRetentionPeriod: 1_209_600,
      SqsManagedSseEnabled: true,
    });
  });

  it('keeps the exactly-once records longer than any redelivery chain the queues allow, and tells the consumer the last receive', () => {
    const t = template(prod);
    const queue = resource(t, 'IngestQueue', 'AWS::SQS::Queue').Properties;
    const dlq = resource(t, 'IngestDeadLetterQueue', 'AWS::SQS::Queue').Properties;
    const env = resource(t, 'IngestLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables;
    const config = readConfig({ ...env, TALLY_TABLE: 'usage', TALLY_INGEST_QUEUE_URL: '' });
    const settings = {
      visibilityTimeoutSeconds: Number(queue.VisibilityTimeout),
      maxReceiveCount: Number((queue.RedrivePolicy as { maxReceiveCount: number }).maxReceiveCount),
      queueRetentionSeconds: Number(queue.MessageRetentionPeriod),
      deadLetterRetentionSeconds: Number(dlq.MessageRetentionPeriod),
    };

    expect(redeliveryGaps({ ...settings, ledgerTtlDays: config.ledgerTtlDays, consumerMaxReceiveCount: config.maxReceiveCount })).toEqual([]);
    // The check bites: a TTL under the queues' retention, or a consumer told another receive count.
    expect(redeliveryGaps({ ...settings, ledgerTtlDays: 30, consumerMaxReceiveCount: config.maxReceiveCount })).toEqual([expect.stringMatching(/TALLY_LEDGER_TTL_DAYS \(30\) is shorter than the redelivery horizon of 58 days/)]);
    expect(redeliveryGaps({ ...settings, maxReceiveCount: 8, ledgerTtlDays: config.ledgerTtlDays, consumerMaxReceiveCount: config.maxReceiveCount })).toEqual([expect.stringMatching(/must equal the queue's maxReceiveCount \(8\)/)]);
  });
});

describe('log bucket created by the stack', () => {
  const bucketName = 'tally-prod-logs-${AWS::AccountId}-${AWS::Region}';

  it('announces every object under the log prefix, whatever it ends with (.gz, .parquet, Firehose names), on the ingest queue', () => {
    const bucket = resource(template(prod), 'LogBucket', 'AWS::S3::Bucket');
    expect(bucket.Properties.NotificationConfiguration).toEqual({
      QueueConfigurations: [
        {
          Event: 's3:ObjectCreated:*',
          Queue: getAtt('IngestQueue'),
          Filter: {
            S3Key: {
              Rules: [{ Name: 'prefix', Value: 'cloudfront/' }],
            },
          },
        },
      ],
    });
    // S3 verifies it may send when the notification is set: the policy must exist first.
    expect(asList(bucket.DependsOn ?? [])).toContain('IngestQueuePolicy');
  });

  it.each([
    ['prod', () => template(prod), 'cloudfront/'],
    ['dev', () => template(dev), 'edge/'],
  ])('keeps what Tally writes outside the log prefix it reads whatever the suffix (%s): exports, and no other S3 writer', (_stage, read, logPrefix) => {
    const t = read();
    const exportPrefix = 'exports/';
    expect(exportPrefix.startsWith(logPrefix) || logPrefix.startsWith(exportPrefix)).toBe(false);
    expect(t.Outputs!.LogPrefix!.Value).toBe(logPrefix);
    // The closer knows both and refuses to start if they ever overlap.
    const closer = resource(t, 'CloserLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables;
    expect(closer).toMatchObject({ TALLY_LOG_PREFIX: logPrefix, TALLY_EXPORT_PREFIX: exportPrefix });
    expect(closer.TALLY_LOG_BUCKET).toEqual(closer.TALLY_EXPORT_BUCKET);
    // Every s3:PutObject any role holds is under the export prefix: webhooks, Stripe events and
    // thresholds go to queues and HTTP, never to the bucket, so nothing Tally writes is re-ingested.
    const puts = policyDocuments(t)
      .flatMap((d) => d.statements.map((statement) => ({ where: d.where, statement })))
      .filter(({ statement }) => statement.Effect === 'Allow' && asList(statement.Action).some((action) => action.startsWith('s3:Put')));
    expect(puts.map((p) => p.where)).toEqual(['CloserRole/closer']);
    const arns = puts.flatMap((p) => stringsIn(p.statement.Resource ?? null)).filter((arn) => arn.includes(':s3:::'));
    expect(arns).toHaveLength(1);
    for (const arn of arns) {
      expect(arn).toMatch(/\/exports\/\*$/);
      expect(arn).not.toContain(`/${logPrefix}`);
    }
  });

  it('is private, encrypted, accepts CloudFront log delivery and is retained in prod', () => {
    const bucket = resource(template(prod), 'LogBucket', 'AWS::S3::Bucket');
    expect(bucket.Properties.BucketName).toEqual({ 'Fn::Sub': bucketName });
    expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(bucket.Properties.OwnershipControls).toEqual({ Rules: [{ ObjectOwnership: 'BucketOwnerPreferred' }] });
    expect(bucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault).toEqual({ SSEAlgorithm: 'AES256' });
    expect(bucket.DeletionPolicy).toBe('Retain');
  });

  it('lets only S3, for that bucket in this account, send to the ingest queue', () => {
    const policy = resource(template(prod), 'IngestQueuePolicy', 'AWS::SQS::QueuePolicy');
    expect(policy.Properties.Queues).toEqual([ref('IngestQueue')]);
    expect(policy.Properties.PolicyDocument.Statement).toEqual([
      {
        Sid: 'LogBucketObjectCreated',
        Effect: 'Allow',
        Principal: { Service: 's3.amazonaws.com' },
        Action: 'sqs:SendMessage',
        Resource: getAtt('IngestQueue'),
        Condition: {
          ArnEquals: { 'aws:SourceArn': { 'Fn::Sub': `arn:\${AWS::Partition}:s3:::${bucketName}` } },
          StringEquals: { 'aws:SourceAccount': ref('AWS::AccountId') },
        },
      },
    ]);
    expect(template(prod).Resources.LogObjectCreatedRule).toBeUndefined();
  });
});

describe('existing log bucket (dev, --param existingLogBucket=acme-cdn-logs)', () => {
  it('creates no bucket and routes its EventBridge Object Created events for every object under the prefix', () => {
    const t = template(dev);
    expect(t.Resources.LogBucket).toBeUndefined();
    const rule = resource(t, 'LogObjectCreatedRule', 'AWS::Events::Rule');
    expect(rule.Properties.EventPattern).toEqual({
      source: ['aws.s3'],
      'detail-type': ['Object Created'],
      detail: { bucket: { name: ['acme-cdn-logs'] }, object: { key: [{ prefix: 'edge/' }] } },
    });
    expect(rule.Properties.Targets).toEqual([{ Id: 'ingest-queue', Arn: getAtt('IngestQueue') }]);
    expect(rule.Properties.Name).toBe('tally-dev-log-object-created');
  });

  it('lets only that rule send to the ingest queue', () => {
    const policy = resource(template(dev), 'IngestQueuePolicy', 'AWS::SQS::QueuePolicy');
    expect(policy.Properties.PolicyDocument.Statement).toEqual([
      {
        Sid: 'LogObjectCreatedRule',
        Effect: 'Allow',
        Principal: { Service: 'events.amazonaws.com' },
        Action: 'sqs:SendMessage',
        Resource: getAtt('IngestQueue'),
        Condition: {
          ArnEquals: {
            'aws:SourceArn': { 'Fn::Sub': 'arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:rule/tally-dev-log-object-created' },
          },
        },
      },
    ]);
  });

  it('lets ingest read only the prefix of that bucket', () => {
    const read = statementsOf(template(dev), 'IngestRole').find((s) => s.Sid === 'ReadLogObjects');
    expect(read).toEqual({
      Sid: 'ReadLogObjects',
      Effect: 'Allow',
      Action: 's3:GetObject',
      Resource: { 'Fn::Sub': ['arn:${AWS::Partition}:s3:::${LogBucketName}/edge/*', { LogBucketName: 'acme-cdn-logs' }] },
    });
  });
});

/**
 * Every DynamoDB operation the ingest path sends, recorded on DynamoDB Local while an
 * object goes through each path: a first receive that fails where it sees it, shards
 * rolling past their cap (tombstones), the last receive (proven: tombstones read, an
 * earlier version's one-key ones too), and usage for a closed day (late markers).
 */
async function ingestOperations(): Promise<string[]> {
  const operations = new Set<string>();
  const record = (clients: AwsClients) =>
    clients.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        operations.add(context.commandName!.replace(/Command$/, ''));
        return next(args);
      },
      { step: 'initialize', name: 'recordOperations' },
    );
  const env = { TALLY_MAX_RECEIVE_COUNT: '3', TALLY_INCREMENT_CONCURRENCY: '1' };
  const account = uniqueId('iam');
  const day = '2026-11-21';
  const text = `#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status\n${day}\t00:00:01\tIAD89-C1\t100\t192.0.2.1\tGET\t${account}.example.com\t/x\t200\n${day}\t00:00:02\tIAD89-C1\t100\t192.0.2.1\tGET\tother-${account}.example.com\t/x\t200\n`;
  const ref = await putLogObject(`cloudfront/${uniqueId('E2IAM')}.${day}-00.x.gz`, text);
  await ingestBatch({ Records: [s3NotificationMessage(ref)] }, testIngestDeps(env, { clients: (c) => (record(c), crashAfterUpdates(c.dynamodb, 1)) }));
  const busy = testIngestDeps(env, { clients: record });
  for (let shard = 0; shard < 4; shard++) {
    for (let i = 0; i < 60; i++) {
      await busy.store.applyIncrement({ account: `other-${account}`, day, shard, key: new TextEncoder().encode(`iam-${shard}-${i}`.padEnd(12, '.')), metrics: { requests: 1, bytes: 1 } });
    }
    // A table from before the tombstone batches: drops not counted in `y`, so proofs there
    // also read an earlier version's one-key tombstone.
    const shardKey = usageKey({ accountId: `other-${account}`, day, shard });
    await testClients().dynamodb.send(new UpdateItemCommand({ TableName: testStackInfo().table, Key: { PK: { S: shardKey.PK }, SK: { S: shardKey.SK } }, UpdateExpression: 'REMOVE y' }));
  }
  await ingestBatch({ Records: [s3NotificationMessage(ref, { receiveCount: 3 })] }, testIngestDeps(env, { clients: record }));
  // Usage that reaches a day long closed is marked late.
  const late = await putLogObject(`cloudfront/${uniqueId('E2IAM')}.2026-10-01-00.x.gz`, text.replaceAll(day, '2026-10-01'));
  await ingestBatch({ Records: [s3NotificationMessage(late)] }, testIngestDeps(env, { clients: record }));
  return [...operations].sort();
}

describe('least privilege', () => {
  it("grants ingest exactly the DynamoDB operations its code sends, on every path", async () => {
    const sent = await ingestOperations();
    const granted = statementsOf(template(prod), 'IngestRole')
      .filter((statement) => JSON.stringify(statement.Resource) === JSON.stringify(getAtt('UsageTable')))
      .flatMap((statement) => asList(statement.Action))
      .map((action) => action.replace(/^dynamodb:/, ''))
      .sort();

    expect(sent).toEqual(['BatchWriteItem', 'GetItem', 'PutItem', 'Query', 'UpdateItem']);
    expect(granted).toEqual(sent);
  }, 120_000);

  it('ingest may write its logs, consume its queue, apply increments and read log objects: nothing else', () => {
    expect(statementsOf(template(prod), 'IngestRole')).toEqual([
      {
        Sid: 'WriteOwnLogs',
        Effect: 'Allow',
        Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: getAtt('IngestLogGroup'),
      },
      {
        Sid: 'ConsumeIngestQueue',
        Effect: 'Allow',
        Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ChangeMessageVisibility'],
        Resource: getAtt('IngestQueue'),
      },
      {
        Sid: 'ApplyIncrementsAndLedger',
        Effect: 'Allow',
        Action: ['dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:PutItem', 'dynamodb:GetItem', 'dynamodb:BatchWriteItem'],
        Resource: getAtt('UsageTable'),
      },
      {
        Sid: 'ReadLogObjects',
        Effect: 'Allow',
        Action: 's3:GetObject',
        Resource: { 'Fn::Sub': ['arn:${AWS::Partition}:s3:::${LogBucketName}/cloudfront/*', { LogBucketName: ref('LogBucket') }] },
      },
    ]);
  });

  it('usage-api may write its logs, Query the table and its indexes, read the last reconcile, peek at the DLQ and read its one signing-secret parameter', () => {
    expect(statementsOf(template(prod), 'UsageApiRole')).toEqual([
      {
        Sid: 'WriteOwnLogs',
        Effect: 'Allow',
        Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: getAtt('UsageApiLogGroup'),
      },
      { Sid: 'ReadUsage', Effect: 'Allow', Action: 'dynamodb:Query', Resource: getAtt('UsageTable') },
      { Sid: 'AccountsOfADay', Effect: 'Allow', Action: 'dynamodb:Query', Resource: { 'Fn::Sub': '${UsageTable.Arn}/index/byDay' } },
      { Sid: 'LedgerBySourceDay', Effect: 'Allow', Action: 'dynamodb:Query', Resource: { 'Fn::Sub': '${UsageTable.Arn}/index/bySourceDay' } },
      {
        Sid: 'ReadLastReconcile',
        Effect: 'Allow',
        Action: 'dynamodb:GetItem',
        Resource: getAtt('UsageTable'),
        Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['HEALTH'] } },
      },
      {
        Sid: 'PeekDeadLetters',
        Effect: 'Allow',
        Action: ['sqs:GetQueueAttributes', 'sqs:ReceiveMessage', 'sqs:ChangeMessageVisibility'],
        Resource: getAtt('IngestDeadLetterQueue'),
      },
      {
        Sid: 'ReadSigningSecret',
        Effect: 'Allow',
        Action: 'ssm:GetParameter',
        Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/tally/prod/jwt-secret' },
      },
    ]);
  });

  it('the threshold evaluator may write its logs, read quotas, usage and crossings, write only THRESHOLD# items, Query the day index and queue webhook events', () => {
    expect(statementsOf(template(prod), 'ThresholdsRole')).toEqual([
      { Sid: 'WriteOwnLogs', Effect: 'Allow', Action: ['logs:CreateLogStream', 'logs:PutLogEvents'], Resource: getAtt('ThresholdsLogGroup') },
      {
        Sid: 'ReadQuotasAndUsage',
        Effect: 'Allow',
        Action: 'dynamodb:Query',
        Resource: getAtt('UsageTable'),
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['QUOTA', 'ACCT#*', 'THRESHOLD#*'] } },
      },
      {
        Sid: 'RecordCrossings',
        Effect: 'Allow',
        Action: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
        Resource: getAtt('UsageTable'),
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['THRESHOLD#*'] } },
      },
      {
        Sid: 'ClearRechecks',
        Effect: 'Allow',
        Action: 'dynamodb:DeleteItem',
        Resource: getAtt('UsageTable'),
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['THRESHOLD#RECHECK'] } },
      },
      { Sid: 'AccountsOfADay', Effect: 'Allow', Action: 'dynamodb:Query', Resource: { 'Fn::Sub': '${UsageTable.Arn}/index/byDay' } },
      { Sid: 'QueueWebhookEvents', Effect: 'Allow', Action: 'sqs:SendMessage', Resource: getAtt('WebhookQueue') },
    ]);
    const fn = resource(template(prod), 'ThresholdsLambdaFunction', 'AWS::Lambda::Function').Properties;
    expect(fn).toMatchObject({ Handler: 'handlers/thresholds.handler', Role: getAtt('ThresholdsRole'), ReservedConcurrentExecutions: 1 });
    expect(fn.Environment.Variables).toMatchObject({ TALLY_QUOTAS: '', TALLY_QUOTA_LEVELS: '80,100', TALLY_CLOSE_GRACE_HOURS: '48' });
    expect(fn.Environment.Variables.TALLY_WEBHOOK_QUEUE_URL).toBeUndefined();
    expect(resource(template(dev), 'ThresholdsLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables.TALLY_WEBHOOK_QUEUE_URL).toEqual(ref('WebhookQueue'));
    expect(resource(template(prod), 'ThresholdsEventsRuleSchedule1', 'AWS::Events::Rule').Properties.ScheduleExpression).toBe('rate(5 minutes)');
  });

  it('the closer may write its logs, read and write close records, Query the day index, put exports and queue webhook events: nothing else', () => {
    expect(statementsOf(template(prod), 'CloserRole')).toEqual([
      { Sid: 'WriteOwnLogs', Effect: 'Allow', Action: ['logs:CreateLogStream', 'logs:PutLogEvents'], Resource: getAtt('CloserLogGroup') },
      { Sid: 'CloseDays', Effect: 'Allow', Action: ['dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'], Resource: getAtt('UsageTable') },
      { Sid: 'AccountsOfADay', Effect: 'Allow', Action: 'dynamodb:Query', Resource: { 'Fn::Sub': '${UsageTable.Arn}/index/byDay' } },
      {
        Sid: 'WriteExports',
        Effect: 'Allow',
        Action: 's3:PutObject',
        Resource: { 'Fn::Sub': ['arn:${AWS::Partition}:s3:::${LogBucketName}/exports/*', { LogBucketName: ref('LogBucket') }] },
      },
      { Sid: 'QueueWebhookEvents', Effect: 'Allow', Action: 'sqs:SendMessage', Resource: getAtt('WebhookQueue') },
      { Sid: 'QueueStripeWork', Effect: 'Allow', Action: 'sqs:SendMessage', Resource: getAtt('StripeQueue') },
    ]);
    const closer = resource(template(prod), 'CloserLambdaFunction', 'AWS::Lambda::Function').Properties;
    expect(closer.Environment.Variables).toMatchObject({ TALLY_CLOSE_GRACE_HOURS: '48', TALLY_EXPORT_BUCKET: ref('LogBucket'), TALLY_EXPORT_PREFIX: 'exports/' });
    expect(resource(template(prod), 'CloserEventsRuleSchedule1', 'AWS::Events::Rule').Properties.ScheduleExpression).toBe('rate(1 hour)');
  });

  it('the webhook sender may write its logs, consume its queue and read its one secret parameter', () => {
    expect(statementsOf(template(prod), 'WebhookSenderRole')).toEqual([
      { Sid: 'WriteOwnLogs', Effect: 'Allow', Action: ['logs:CreateLogStream', 'logs:PutLogEvents'], Resource: getAtt('WebhookSenderLogGroup') },
      {
        Sid: 'ConsumeWebhookQueue',
        Effect: 'Allow',
        Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ChangeMessageVisibility'],
        Resource: getAtt('WebhookQueue'),
      },
      {
        Sid: 'ReadWebhookSecret',
        Effect: 'Allow',
        Action: 'ssm:GetParameter',
        Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/tally/prod/webhook-secret' },
      },
    ]);
    const queue = resource(template(prod), 'WebhookQueue', 'AWS::SQS::Queue').Properties;
    expect(queue.RedrivePolicy).toEqual({ deadLetterTargetArn: getAtt('WebhookDeadLetterQueue'), maxReceiveCount: 10 });
  });

  it('queues webhook events only when a webhook URL is given', () => {
    const closerEnv = (t: Template) => resource(t, 'CloserLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables;
    const senderEnv = resource(template(dev), 'WebhookSenderLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables;
    expect(closerEnv(template(prod)).TALLY_WEBHOOK_QUEUE_URL).toBeUndefined();
    expect(closerEnv(template(dev)).TALLY_WEBHOOK_QUEUE_URL).toEqual(ref('WebhookQueue'));
    expect(senderEnv).toMatchObject({ TALLY_WEBHOOK_URL: 'https://billing.example.com/hooks/tally', TALLY_WEBHOOK_SECRET_PARAMETER: '/tally/dev/webhook-secret' });
  });

  it('the Stripe sender may write its logs, consume its queue, read its one key parameter, read links and closed days, write only its outbox and leases, and queue webhook events', () => {
    expect(statementsOf(template(prod), 'StripeSenderRole')).toEqual([
      { Sid: 'WriteOwnLogs', Effect: 'Allow', Action: ['logs:CreateLogStream', 'logs:PutLogEvents'], Resource: getAtt('StripeSenderLogGroup') },
      {
        Sid: 'ConsumeStripeQueue',
        Effect: 'Allow',
        Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ChangeMessageVisibility'],
        Resource: getAtt('StripeQueue'),
      },
      { Sid: 'QueueRunningSweep', Effect: 'Allow', Action: 'sqs:SendMessage', Resource: getAtt('StripeQueue') },
      {
        Sid: 'ReadStripeKey',
        Effect: 'Allow',
        Action: 'ssm:GetParameter',
        Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/tally/prod/stripe-api-key' },
      },
      {
        Sid: 'ReadLinksAndClosedDays',
        Effect: 'Allow',
        Action: ['dynamodb:Query', 'dynamodb:GetItem'],
        Resource: getAtt('UsageTable'),
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['STRIPE#*', 'CLOSED', 'CLOSED#*', 'ACCT#*'] } },
      },
      {
        Sid: 'WriteOutboxAndLeases',
        Effect: 'Allow',
        Action: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
        Resource: getAtt('UsageTable'),
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['STRIPE#OUT#*', 'STRIPE#LOCK'] } },
      },
      { Sid: 'QueueWebhookEvents', Effect: 'Allow', Action: 'sqs:SendMessage', Resource: getAtt('WebhookQueue') },
    ]);
    const queue = resource(template(prod), 'StripeQueue', 'AWS::SQS::Queue').Properties;
    expect(queue.RedrivePolicy).toEqual({ deadLetterTargetArn: getAtt('StripeDeadLetterQueue'), maxReceiveCount: 20 });
    const sender = resource(template(prod), 'StripeSenderLambdaFunction', 'AWS::Lambda::Function').Properties;
    // The queue hides a message longer than an invocation can hold it.
    expect(queue.VisibilityTimeout).toBeGreaterThanOrEqual(6 * sender.Timeout);
    expect(sender).toMatchObject({ Handler: 'handlers/stripe-sender.handler', Role: getAtt('StripeSenderRole') });
    const mapping = resource(template(prod), 'StripeSenderEventSourceMappingSQSStripeQueue', 'AWS::Lambda::EventSourceMapping').Properties;
    expect(mapping).toMatchObject({ EventSourceArn: getAtt('StripeQueue'), FunctionResponseTypes: ['ReportBatchItemFailures'] });
    // The running sweep: every TALLY_STRIPE_RUNNING_MINUTES (default 60), its input the sweep's marker.
    const sweep = resource(template(prod), 'StripeSenderEventsRuleSchedule1', 'AWS::Events::Rule').Properties;
    expect(sweep).toMatchObject({ ScheduleExpression: 'rate(60 minutes)', State: 'ENABLED' });
    expect(JSON.stringify(sweep.Targets)).toContain('runningSweep');
    expect(sender.Environment.Variables).toMatchObject({ TALLY_STRIPE_RUNNING_MINUTES: '60', TALLY_STRIPE_QUEUE_URL: ref('StripeQueue') });
  });

  it('queues closed days for Stripe only when meters are configured; the key comes from SSM, never the template', () => {
    const closerEnv = (t: Template) => resource(t, 'CloserLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables;
    const senderEnv = resource(template(dev), 'StripeSenderLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables;
    expect(closerEnv(template(prod)).TALLY_STRIPE_QUEUE_URL).toBeUndefined();
    expect(closerEnv(template(dev)).TALLY_STRIPE_QUEUE_URL).toEqual(ref('StripeQueue'));
    expect(senderEnv).toMatchObject({
      TALLY_STRIPE_API_KEY_PARAMETER: '/tally/dev/stripe-api-key',
      TALLY_STRIPE_API_BASE: 'https://api.stripe.com',
      TALLY_STRIPE_METERS: STRIPE_METERS,
      TALLY_WEBHOOK_QUEUE_URL: ref('WebhookQueue'),
    });
    expect(senderEnv.TALLY_STRIPE_API_KEY).toBeUndefined();
    // The settings the sender reads are valid as deployed.
    expect(readStripeConfig({ ...senderEnv, TALLY_STRIPE_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/1/tally-dev-stripe' })).toMatchObject({ key: { kind: 'key-parameter', parameterName: '/tally/dev/stripe-api-key' }, meters: { requests: 'cdn_requests', bytes: 'cdn_bytes' } });
  });

  it('grants usage-api no SSM access when tokens are verified with a public key', () => {
    expect(statementsOf(template(staging), 'UsageApiRole').map((s) => s.Sid)).toEqual(['WriteOwnLogs', 'ReadUsage', 'AccountsOfADay', 'LedgerBySourceDay', 'ReadLastReconcile', 'PeekDeadLetters']);
  });

  it('adds kms:Decrypt through SSM only for a secret under a customer managed key', () => {
    const statements = statementsOf(template(dev), 'UsageApiRole');
    expect(statements.map((s) => s.Sid)).toEqual(['WriteOwnLogs', 'ReadUsage', 'AccountsOfADay', 'LedgerBySourceDay', 'ReadLastReconcile', 'PeekDeadLetters', 'ReadSigningSecret', 'DecryptSigningSecret']);
    expect(statements[7]).toEqual({
      Sid: 'DecryptSigningSecret',
      Effect: 'Allow',
      Action: 'kms:Decrypt',
      Resource: CUSTOMER_KEY,
      Condition: { StringEquals: { 'kms:ViaService': { 'Fn::Sub': 'ssm.${AWS::Region}.${AWS::URLSuffix}' } } },
    });
  });

  it.each([
    ['prod', () => template(prod)],
    ['dev', () => template(dev)],
    ['staging', () => template(staging)],
  ])('grants no wildcard action, resource or principal anywhere (%s)', (_stage, read) => {
    const documents = policyDocuments(read());
    expect(documents.map((d) => d.where).sort()).toEqual([
      'CloserRole/AssumeRolePolicyDocument',
      'CloserRole/closer',
      'DashboardBucketPolicy',
      'IngestQueuePolicy',
      'IngestRole/AssumeRolePolicyDocument',
      'IngestRole/ingest',
      'ServerlessDeploymentBucketPolicy',
      'StripeSenderRole/AssumeRolePolicyDocument',
      'StripeSenderRole/stripe-sender',
      'ThresholdsRole/AssumeRolePolicyDocument',
      'ThresholdsRole/thresholds',
      'UsageApiRole/AssumeRolePolicyDocument',
      'UsageApiRole/usage-api',
      'WebhookSenderRole/AssumeRolePolicyDocument',
      'WebhookSenderRole/webhook-sender',
    ]);
    // The only wildcards an Allow may hold: the objects under the log prefix of one named
    // bucket, and the objects of the dashboard bucket (for its CloudFront distribution).
    const allowedWildcards = [/^arn:\$\{AWS::Partition\}:s3:::\$\{LogBucketName\}\/[a-z0-9._-]+\/\*$/, /^\$\{DashboardBucket\.Arn\}\/\*$/];
    const violations: string[] = [];
    for (const { where, statements } of documents) {
      for (const statement of statements.filter((s) => s.Effect === 'Allow')) {
        const at = `${where} ${statement.Sid ?? ''}`;
        for (const action of asList(statement.Action)) if (action.includes('*')) violations.push(`${at}: action ${action}`);
        for (const principal of stringsIn(statement.Principal ?? null)) if (principal.includes('*')) violations.push(`${at}: principal ${principal}`);
        if (statement.Resource === undefined && !where.endsWith('AssumeRolePolicyDocument')) violations.push(`${at}: no resource`);
        for (const arn of stringsIn(statement.Resource ?? null)) {
          if (arn === '' || (arn.includes('*') && !allowedWildcards.some((allowed) => allowed.test(arn)))) {
            violations.push(`${at}: resource "${arn}"`);
          }
        }
      }
    }
    expect(violations).toEqual([]);
  });

  it('keeps the one wildcard action osls emits to a Deny of plain-HTTP access to its deployment bucket', () => {
    const wildcards = policyDocuments(template(prod)).flatMap(({ where, statements }) =>
      statements.filter((s) => asList(s.Action).some((a) => a.includes('*'))).map((s) => ({ where, ...s })),
    );
    expect(wildcards).toHaveLength(1);
    expect(wildcards[0]).toMatchObject({
      where: 'ServerlessDeploymentBucketPolicy',
      Effect: 'Deny',
      Action: 's3:*',
      Condition: { Bool: { 'aws:SecureTransport': false } },
    });
  });

  it('lets API Gateway invoke usage-api only from this HTTP API', () => {
    const permission = resource(template(prod), 'UsageApiLambdaPermissionHttpApi', 'AWS::Lambda::Permission');
    expect(permission.Properties).toMatchObject({
      FunctionName: getAtt('UsageApiLambdaFunction'),
      Action: 'lambda:InvokeFunction',
      Principal: 'apigateway.amazonaws.com',
    });
    expect(stringsIn(permission.Properties.SourceArn)).toContain('HttpApi');
  });
});

describe('usage table', () => {
  it('is the same definition the local stack creates, on demand, with PITR and TTL', () => {
    const table = resource(template(prod), 'UsageTable', 'AWS::DynamoDB::Table').Properties;
    expect(table.AttributeDefinitions).toEqual(tableDefinition.AttributeDefinitions);
    expect(table.KeySchema).toEqual(tableDefinition.KeySchema);
    expect(table.GlobalSecondaryIndexes).toEqual(tableDefinition.GlobalSecondaryIndexes);
    expect(table.BillingMode).toBe('PAY_PER_REQUEST');
    expect(table.BillingMode).toBe(tableDefinition.BillingMode);
    expect(table.TimeToLiveSpecification).toEqual({ AttributeName: 'ttl', Enabled: true });
    expect(table.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(table.TableName).toBe('tally-prod-usage');
  });

  it.each([
    ['prod', () => template(prod)],
    ['staging', () => template(staging)],
  ])('is protected from deletion outside dev (%s)', (_stage, read) => {
    const table = resource(read(), 'UsageTable', 'AWS::DynamoDB::Table');
    expect(table.Properties.DeletionProtectionEnabled).toBe(true);
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.UpdateReplacePolicy).toBe('Retain');
    expect(resource(read(), 'LogBucket', 'AWS::S3::Bucket').DeletionPolicy).toBe('Retain');
  });

  it('can be deleted with the dev stack', () => {
    const devTable = resource(template(dev), 'UsageTable', 'AWS::DynamoDB::Table');
    expect(devTable.Properties.DeletionProtectionEnabled).toBe(false);
    expect(devTable.DeletionPolicy).toBe('Delete');
  });
});

describe('HTTP API', () => {
  it('routes GET /v1/accounts/{accountId}/usage to usage-api (payload 2.0)', () => {
    const t = template(prod);
    expect(resource(t, 'HttpApiRouteGetV1AccountsAccountidVarUsage', 'AWS::ApiGatewayV2::Route').Properties).toMatchObject({
      ApiId: ref('HttpApi'),
      RouteKey: 'GET /v1/accounts/{accountId}/usage',
    });
    expect(resource(t, 'HttpApiIntegrationUsageApi', 'AWS::ApiGatewayV2::Integration').Properties).toMatchObject({
      IntegrationType: 'AWS_PROXY',
      IntegrationUri: getAtt('UsageApiLambdaFunction'),
      PayloadFormatVersion: '2.0',
    });
    expect(Object.keys(resourcesOfType(t, 'AWS::ApiGatewayV2::Route')).sort()).toEqual([
      'HttpApiRouteGetV1Accounts',
      'HttpApiRouteGetV1AccountsAccountidVarDaysDayVarExplain',
      'HttpApiRouteGetV1AccountsAccountidVarQuota',
      'HttpApiRouteGetV1AccountsAccountidVarUsage',
      'HttpApiRouteGetV1Health',
    ]);
    expect(resource(t, 'HttpApiRouteGetV1AccountsAccountidVarQuota', 'AWS::ApiGatewayV2::Route').Properties.RouteKey).toBe('GET /v1/accounts/{accountId}/quota');
    expect(resource(t, 'HttpApiRouteGetV1Accounts', 'AWS::ApiGatewayV2::Route').Properties.RouteKey).toBe('GET /v1/accounts');
  });

  it('is same-origin only by default: the dashboard reaches it through CloudFront', () => {
    expect(resource(template(prod), 'HttpApi', 'AWS::ApiGatewayV2::Api').Properties.CorsConfiguration).toBeUndefined();
  });

  it('answers CORS for the configured origins with the headers the handler uses', () => {
    expect(resource(template(dev), 'HttpApi', 'AWS::ApiGatewayV2::Api').Properties.CorsConfiguration).toEqual({
      AllowOrigins: ['https://portal.example.com', 'http://localhost:8080'],
      AllowMethods: ['GET', 'OPTIONS'],
      AllowHeaders: ['Authorization', 'Accept', 'If-None-Match'],
      ExposeHeaders: ['ETag', 'Content-Disposition', 'WWW-Authenticate'],
      MaxAge: 600,
    });
    const env = resource(template(dev), 'UsageApiLambdaFunction', 'AWS::Lambda::Function').Properties.Environment.Variables;
    expect(env.TALLY_CORS_ORIGIN).toBe('https://portal.example.com,http://localhost:8080');
  });

  it('throttles the default stage and logs its access', () => {
    const t = template(prod);
    const stage = resource(t, 'HttpApiStage', 'AWS::ApiGatewayV2::Stage').Properties;
    expect(stage.DefaultRouteSettings).toEqual({ DetailedMetricsEnabled: false, ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 });
    expect(stage.AccessLogSettings.DestinationArn).toEqual(getAtt('HttpApiLogGroup'));
  });
});

describe('dashboard hosting', () => {
  it('serves a private bucket through CloudFront with origin access control', () => {
    const t = template(prod);
    const bucket = resource(t, 'DashboardBucket', 'AWS::S3::Bucket').Properties;
    expect(bucket.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(resource(t, 'DashboardOriginAccessControl', 'AWS::CloudFront::OriginAccessControl').Properties.OriginAccessControlConfig).toMatchObject({
      OriginAccessControlOriginType: 's3',
      SigningBehavior: 'always',
      SigningProtocol: 'sigv4',
    });
    expect(resource(t, 'DashboardBucketPolicy', 'AWS::S3::BucketPolicy').Properties.PolicyDocument.Statement).toEqual([
      {
        Sid: 'DashboardDistributionReads',
        Effect: 'Allow',
        Principal: { Service: 'cloudfront.amazonaws.com' },
        Action: 's3:GetObject',
        Resource: { 'Fn::Sub': '${DashboardBucket.Arn}/*' },
        Condition: {
          StringEquals: {
            'AWS:SourceArn': { 'Fn::Sub': 'arn:${AWS::Partition}:cloudfront::${AWS::AccountId}:distribution/${DashboardDistribution}' },
          },
        },
      },
    ]);
  });

  it('sends /v1/* to the HTTP API uncached and everything else to the bucket', () => {
    const config = resource(template(prod), 'DashboardDistribution', 'AWS::CloudFront::Distribution').Properties.DistributionConfig;
    expect(config.DefaultRootObject).toBe('index.html');
    expect(config.Origins).toEqual([
      {
        Id: 'dashboard',
        DomainName: getAtt('DashboardBucket', 'RegionalDomainName'),
        OriginAccessControlId: getAtt('DashboardOriginAccessControl', 'Id'),
        S3OriginConfig: { OriginAccessIdentity: '' },
      },
      {
        Id: 'usage-api',
        DomainName: { 'Fn::Sub': '${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}' },
        CustomOriginConfig: { OriginProtocolPolicy: 'https-only', OriginSSLProtocols: ['TLSv1.2'] },
      },
    ]);
    expect(config.DefaultCacheBehavior).toMatchObject({
      TargetOriginId: 'dashboard',
      ViewerProtocolPolicy: 'redirect-to-https',
      CachePolicyId: '658327ea-f89d-4fab-a63d-7e88639e58f6', // Managed-CachingOptimized
      ResponseHeadersPolicyId: ref('DashboardResponseHeadersPolicy'),
    });
    expect(config.CacheBehaviors).toEqual([
      expect.objectContaining({
        PathPattern: '/v1/*',
        TargetOriginId: 'usage-api',
        AllowedMethods: ['GET', 'HEAD', 'OPTIONS'],
        CachePolicyId: '4135ea2d-6df8-44a3-9df3-4b5a84be39ad', // Managed-CachingDisabled
        OriginRequestPolicyId: 'b689b0a8-53d0-40ab-baf2-68738e2966ac', // Managed-AllViewerExceptHostHeader
      }),
    ]);
  });

  it('sends the dashboard with the security headers the local server sends', () => {
    const policy = resource(template(prod), 'DashboardResponseHeadersPolicy', 'AWS::CloudFront::ResponseHeadersPolicy');
    const headers = policy.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig;
    // Same policy as src/local/api-server.ts: the page runs no inline script and calls only its own origin.
    expect(headers.ContentSecurityPolicy).toEqual({
      ContentSecurityPolicy:
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
      Override: true,
    });
    expect(headers.FrameOptions).toEqual({ FrameOption: 'DENY', Override: true });
    expect(headers.ReferrerPolicy).toEqual({ ReferrerPolicy: 'no-referrer', Override: true });
    expect(headers.ContentTypeOptions).toEqual({ Override: true });
  });
});

describe('alarms', () => {
  const expected = {
    DeadLetterQueueDepthAlarm: ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', getAtt('IngestDeadLetterQueue', 'QueueName'), 0],
    IngestQueueAgeAlarm: ['AWS/SQS', 'ApproximateAgeOfOldestMessage', 'QueueName', getAtt('IngestQueue', 'QueueName'), 900],
    IngestErrorsAlarm: ['AWS/Lambda', 'Errors', 'FunctionName', ref('IngestLambdaFunction'), 0],
    IngestThrottlesAlarm: ['AWS/Lambda', 'Throttles', 'FunctionName', ref('IngestLambdaFunction'), 0],
    UsageApiErrorsAlarm: ['AWS/Lambda', 'Errors', 'FunctionName', ref('UsageApiLambdaFunction'), 0],
    UsageApiThrottlesAlarm: ['AWS/Lambda', 'Throttles', 'FunctionName', ref('UsageApiLambdaFunction'), 0],
    CloserErrorsAlarm: ['AWS/Lambda', 'Errors', 'FunctionName', ref('CloserLambdaFunction'), 0],
    ThresholdsErrorsAlarm: ['AWS/Lambda', 'Errors', 'FunctionName', ref('ThresholdsLambdaFunction'), 0],
    WebhookSenderErrorsAlarm: ['AWS/Lambda', 'Errors', 'FunctionName', ref('WebhookSenderLambdaFunction'), 0],
    WebhookDeadLetterQueueDepthAlarm: ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', getAtt('WebhookDeadLetterQueue', 'QueueName'), 0],
    WebhookBacklogAlarm: ['AWS/SQS', 'ApproximateAgeOfOldestMessage', 'QueueName', getAtt('WebhookQueue', 'QueueName'), 3600],
    StripeSenderErrorsAlarm: ['AWS/Lambda', 'Errors', 'FunctionName', ref('StripeSenderLambdaFunction'), 0],
    StripeDeadLetterQueueDepthAlarm: ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', getAtt('StripeDeadLetterQueue', 'QueueName'), 0],
    StripeBacklogAlarm: ['AWS/SQS', 'ApproximateAgeOfOldestMessage', 'QueueName', getAtt('StripeQueue', 'QueueName'), 3600],
  } as const;

  it.each(Object.entries(expected))('%s watches the right metric', (id, [namespace, metric, dimension, value, threshold]) => {
    const alarm = resource(template(prod), id, 'AWS::CloudWatch::Alarm').Properties;
    expect(alarm).toMatchObject({
      Namespace: namespace,
      MetricName: metric,
      Dimensions: [{ Name: dimension, Value: value }],
      Threshold: threshold,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
      AlarmActions: [ref('AlarmTopic')],
      OKActions: [ref('AlarmTopic')],
    });
  });

  it('sums DynamoDB throttled requests of every operation Tally sends to the table', () => {
    const alarm = resource(template(prod), 'UsageTableThrottlesAlarm', 'AWS::CloudWatch::Alarm').Properties;
    expect(alarm).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold', AlarmActions: [ref('AlarmTopic')] });
    const metrics = (alarm.Metrics as { Id: string; MetricStat?: { Metric: { Namespace: string; MetricName: string; Dimensions: unknown } } }[])
      .filter((m) => m.MetricStat !== undefined)
      .map((m) => [m.MetricStat!.Metric.Namespace, m.MetricStat!.Metric.MetricName, m.MetricStat!.Metric.Dimensions]);
    expect(metrics).toEqual(
      ['GetItem', 'PutItem', 'UpdateItem', 'Query', 'BatchWriteItem', 'DeleteItem'].map((operation) => [
        'AWS/DynamoDB',
        'ThrottledRequests',
        [
          { Name: 'TableName', Value: ref('UsageTable') },
          { Name: 'Operation', Value: operation },
        ],
      ]),
    );
    const [total] = (alarm.Metrics as { Id: string; Expression?: string; ReturnData: boolean }[]).filter((m) => m.ReturnData);
    expect(total?.Expression).toBe('FILL(getItem, 0) + FILL(putItem, 0) + FILL(updateItem, 0) + FILL(query, 0) + FILL(batchWriteItem, 0) + FILL(deleteItem, 0)');
  });

  it('are exactly these, each named under the stack, notifying the topic on alarm and on OK', () => {
    const alarms = resourcesOfType(template(prod), 'AWS::CloudWatch::Alarm');
    expect(Object.keys(alarms).sort()).toEqual([...Object.keys(expected), 'UsageTableThrottlesAlarm', 'UnresolvedIncrementsAlarm', 'StripeEventsRefusedAlarm', 'StripeLateUsageAlarm'].sort());
    const names = Object.values(alarms).map((alarm) => alarm.Properties.AlarmName as string);
    expect(new Set(names).size).toBe(names.length);
    for (const alarm of Object.values(alarms)) {
      expect(alarm.Properties.AlarmName).toMatch(/^tally-prod-[a-z-]+$/);
      expect(alarm.Properties.AlarmDescription).toEqual(expect.any(String));
      expect(alarm.Properties).toMatchObject({ EvaluationPeriods: 1, AlarmActions: [ref('AlarmTopic')], OKActions: [ref('AlarmTopic')] });
    }
    expect(alarms.IngestQueueAgeAlarm!.Properties.AlarmDescription).toContain('longer than 900 s');
  });

  it('StripeEventsRefusedAlarm fires as soon as Stripe refuses one meter event (the metric the sender publishes)', () => {
    const alarm = resource(template(prod), 'StripeEventsRefusedAlarm', 'AWS::CloudWatch::Alarm').Properties;
    expect(alarm).toMatchObject({
      Namespace: 'Tally',
      MetricName: 'StripeEventsFailed',
      Dimensions: expect.arrayContaining([
        { Name: 'service', Value: STRIPE_SERVICE },
        { Name: 'FunctionName', Value: ref('StripeSenderLambdaFunction') },
      ]),
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      AlarmActions: [ref('AlarmTopic')],
    });
  });

  it('StripeLateUsageAlarm fires as soon as one total reaches a day whose invoice was finalized with another (the metric the sender publishes)', () => {
    const alarm = resource(template(prod), 'StripeLateUsageAlarm', 'AWS::CloudWatch::Alarm').Properties;
    expect(alarm).toMatchObject({
      AlarmName: 'tally-prod-stripe-late-usage',
      Namespace: 'Tally',
      MetricName: 'StripeLateUsage',
      Dimensions: expect.arrayContaining([{ Name: 'service', Value: STRIPE_SERVICE }]),
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('UnresolvedIncrementsAlarm fires as soon as ingest leaves one increment unresolved', () => {
    const alarm = resource(template(prod), 'UnresolvedIncrementsAlarm', 'AWS::CloudWatch::Alarm').Properties;
    expect(alarm).toMatchObject({
      Namespace: 'Tally',
      MetricName: 'UnresolvedIncrements',
      Dimensions: [
        { Name: 'service', Value: 'tally-ingest' },
        { Name: 'FunctionName', Value: ref('IngestLambdaFunction') },
      ],
      Statistic: 'Sum',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      AlarmActions: [ref('AlarmTopic')],
    });
    expect(alarm.AlarmDescription).toContain('tally reconcile --resolve');
  });

  it('subscribes the on-call e-mail only when one is given', () => {
    expect(template(prod).Resources.AlarmEmailSubscription).toBeUndefined();
    expect(resource(template(dev), 'AlarmEmailSubscription', 'AWS::SNS::Subscription').Properties).toEqual({
      TopicArn: ref('AlarmTopic'),
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
    });
  });
});

describe('outputs', () => {
  it('name what an operator needs after a deploy', () => {
    const outputs = template(prod).Outputs!;
    expect(Object.keys(outputs).sort()).toEqual(
      [
        'AlarmTopicArn',
        'DashboardBucketName',
        'DashboardDistributionId',
        'DashboardUrl',
        'DeadLetterQueueUrl',
        'ExportLocation',
        'HttpApiId',
        'HttpApiUrl',
        'IngestQueueUrl',
        'LogBucketName',
        'LogPrefix',
        'ServerlessDeploymentBucketName',
        'StripeDeadLetterQueueUrl',
        'StripeQueueUrl',
        'UsageTableName',
        'WebhookDeadLetterQueueUrl',
        'WebhookQueueUrl',
      ].sort(),
    );
    expect(outputs.LogBucketName!.Value).toEqual(ref('LogBucket'));
    expect(template(dev).Outputs!.LogBucketName!.Value).toBe('acme-cdn-logs');
  });
});
