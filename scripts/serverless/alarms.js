'use strict';

// Every CloudWatch alarm of the stack, one entry each, turned into CloudFormation by one
// function. serverless.yml merges them into its resources with
// `${file(./scripts/serverless/alarms.js):resources}`; every alarm notifies the stack's
// AlarmTopic on ALARM and on OK.
//
// To alarm on a metric the functions publish themselves (CloudWatch embedded metric
// format, namespace `Tally`, dimension FunctionName: see tallyMetric), add one entry
// to ALARMS with `metric: tallyMetric('<MetricName>')`, say which way it breaches
// (`above` or `below`) and, for a setting, a `${param:...}` threshold (then add that
// param to serverless.yml's params and to docs/deployment.md's table):
//
//   QueueAgeAlarm: {
//     name: 'queue-age',
//     description: 'The oldest message waits longer than the threshold.',
//     metric: queueMetric('ApproximateAgeOfOldestMessage', 'IngestQueue'),
//     statistic: 'Maximum',
//     period: 300,
//     above: '${param:queueAgeAlarmSeconds}',
//   },
//
// Plain CommonJS because osls loads it with require().

/** Namespace of the metrics Tally's functions publish in embedded metric format. */
const TALLY_NAMESPACE = 'Tally';

/**
 * @typedef {{ namespace: string, name: string, dimensions: Record<string, unknown> }} MetricSpec
 * @typedef {{ label: string, expression: string, metrics: Record<string, MetricSpec> }} MetricSum
 * @typedef {{
 *   name: string,
 *   description: string,
 *   metric: MetricSpec | MetricSum,
 *   statistic: 'Sum' | 'Maximum' | 'Minimum' | 'Average',
 *   period: number,
 *   above?: number | string,
 *   below?: number | string,
 *   evaluationPeriods?: number,
 *   treatMissingData?: 'notBreaching' | 'breaching' | 'ignore' | 'missing',
 * }} AlarmSpec
 */

/** @returns {MetricSpec} a metric of one SQS queue of the stack (logical id). */
const queueMetric = (name, queueId) => ({
  namespace: 'AWS/SQS',
  name,
  dimensions: { QueueName: { 'Fn::GetAtt': [queueId, 'QueueName'] } },
});

/** @returns {MetricSpec} a metric of one function of the stack (logical id). */
const functionMetric = (name, functionId) => ({
  namespace: 'AWS/Lambda',
  name,
  dimensions: { FunctionName: { Ref: functionId } },
});

/**
 * A metric Tally's own code publishes in embedded metric format: namespace `Tally`, one
 * dimension `FunctionName` (the emitter reads it from AWS_LAMBDA_FUNCTION_NAME, which
 * names the stage's function, so stages sharing an account never mix).
 *
 * @param {string} name
 * @param {string} functionId logical id of the publishing function
 * @returns {MetricSpec}
 */
const tallyMetric = (name, functionId = 'IngestLambdaFunction') => ({
  namespace: TALLY_NAMESPACE,
  name,
  // Powertools Metrics adds the service dimension to everything it publishes.
  dimensions: { service: TALLY_SERVICES[functionId], FunctionName: { Ref: functionId } },
});

/** The service name each function's Powertools Metrics publishes under (src/adapters/history-metrics.ts). */
const TALLY_SERVICES = { IngestLambdaFunction: 'tally-ingest', StripeSenderLambdaFunction: 'tally-stripe' };

/**
 * DynamoDB's ThrottledRequests exists only per (table, operation): the sum over the
 * operations Tally sends, each gap counted as zero.
 *
 * @returns {MetricSum}
 */
function usageTableThrottles(operations) {
  const id = (operation) => operation.charAt(0).toLowerCase() + operation.slice(1);
  return {
    label: `ThrottledRequests (${operations.join(', ')})`,
    expression: operations.map((operation) => `FILL(${id(operation)}, 0)`).join(' + '),
    metrics: Object.fromEntries(
      operations.map((operation) => [
        id(operation),
        {
          namespace: 'AWS/DynamoDB',
          name: 'ThrottledRequests',
          dimensions: { TableName: { Ref: 'UsageTable' }, Operation: operation },
        },
      ]),
    ),
  };
}

/** @type {Record<string, AlarmSpec>} keyed by CloudFormation logical id. */
const ALARMS = {
  UnresolvedIncrementsAlarm: {
    name: 'unresolved-increments',
    description:
      'Ingest left increments unapplied because nothing could prove whether a crashed attempt had applied them (a shard written before every dropped key left a tombstone). Usage is short until settled: run `tally reconcile --resolve`.',
    metric: tallyMetric('UnresolvedIncrements'),
    statistic: 'Sum',
    period: 300,
    above: 0,
  },
  DeadLetterQueueDepthAlarm: {
    name: 'dlq-not-empty',
    description:
      'Messages reached the ingest dead-letter queue (poison objects or repeated failures); inspect, fix, then `tally replay`.',
    metric: queueMetric('ApproximateNumberOfMessagesVisible', 'IngestDeadLetterQueue'),
    statistic: 'Maximum',
    period: 60,
    above: 0,
  },
  IngestQueueAgeAlarm: {
    name: 'ingest-backlog',
    description: 'The oldest ingest message waits longer than ${param:queueAgeAlarmSeconds} s; usage is falling behind.',
    metric: queueMetric('ApproximateAgeOfOldestMessage', 'IngestQueue'),
    statistic: 'Maximum',
    period: 300,
    above: '${param:queueAgeAlarmSeconds}',
  },
  IngestErrorsAlarm: {
    name: 'ingest-errors',
    description: 'The ingest function failed whole invocations (its messages come back and may reach the DLQ).',
    metric: functionMetric('Errors', 'IngestLambdaFunction'),
    statistic: 'Sum',
    period: 300,
    above: 0,
  },
  IngestThrottlesAlarm: {
    name: 'ingest-throttles',
    description: 'Ingest invocations were throttled (account concurrency exhausted).',
    metric: functionMetric('Throttles', 'IngestLambdaFunction'),
    statistic: 'Sum',
    period: 300,
    above: 0,
  },
  UsageApiErrorsAlarm: {
    name: 'usage-api-errors',
    description: 'The usage API function failed invocations (callers saw 5xx).',
    metric: functionMetric('Errors', 'UsageApiLambdaFunction'),
    statistic: 'Sum',
    period: 300,
    above: 0,
  },
  UsageApiThrottlesAlarm: {
    name: 'usage-api-throttles',
    description: 'Usage API invocations were throttled (callers saw 429/5xx).',
    metric: functionMetric('Throttles', 'UsageApiLambdaFunction'),
    statistic: 'Sum',
    period: 300,
    above: 0,
  },
  WebhookDeadLetterQueueDepthAlarm: {
    name: 'webhook-dlq-not-empty',
    description:
      'A webhook event was refused by the receiver through every retry and reached the webhook dead-letter queue; fix the receiver, then move the messages back (tally replay --queue <webhook DLQ> is for ingest only: use the SQS console redrive).',
    metric: queueMetric('ApproximateNumberOfMessagesVisible', 'WebhookDeadLetterQueue'),
    statistic: 'Maximum',
    period: 60,
    above: 0,
  },
  WebhookBacklogAlarm: {
    name: 'webhook-backlog',
    description: 'A webhook event has waited more than an hour: the receiver is failing and events are being retried.',
    metric: queueMetric('ApproximateAgeOfOldestMessage', 'WebhookQueue'),
    statistic: 'Maximum',
    period: 300,
    above: 3600,
  },
  CloserErrorsAlarm: {
    name: 'closer-errors',
    description: 'The closer failed a run (a day could not be closed, revised or exported); the next hourly run resumes it. Look at its log; `tally close` runs it by hand.',
    metric: functionMetric('Errors', 'CloserLambdaFunction'),
    statistic: 'Sum',
    period: 3600,
    above: 0,
  },
  ThresholdsErrorsAlarm: {
    name: 'thresholds-errors',
    description: 'The threshold evaluator failed a run (an account could not be read or an event queued); the next run, 5 minutes later, retries. `tally quota check` runs it by hand.',
    metric: functionMetric('Errors', 'ThresholdsLambdaFunction'),
    statistic: 'Sum',
    period: 3600,
    above: 0,
  },
  WebhookSenderErrorsAlarm: {
    name: 'webhook-sender-errors',
    description: 'The webhook sender failed whole invocations (its secret could not be read?); events wait on the queue.',
    metric: functionMetric('Errors', 'WebhookSenderLambdaFunction'),
    statistic: 'Sum',
    period: 300,
    above: 0,
  },
  StripeSenderErrorsAlarm: {
    name: 'stripe-sender-errors',
    description: 'The Stripe sender failed whole invocations (its key could not be read?); closed days wait on the Stripe queue.',
    metric: functionMetric('Errors', 'StripeSenderLambdaFunction'),
    statistic: 'Sum',
    period: 300,
    above: 0,
  },
  StripeEventsRefusedAlarm: {
    name: 'stripe-events-refused',
    description:
      'Stripe refused meter events (a 4xx other than "already exists": a missing meter, a bad customer, a revoked key), or the sender held them (a day already on the meters of the other window after TALLY_STRIPE_WINDOW was switched, docs/stripe.md#hour-windows); they are recorded as failed. `tally stripe status` names them, `tally stripe check` the meters.',
    metric: tallyMetric('StripeEventsFailed', 'StripeSenderLambdaFunction'),
    statistic: 'Sum',
    period: 300,
    above: 0,
  },
  StripeLateUsageAlarm: {
    name: 'stripe-late-usage',
    description:
      'A day\'s total reached Stripe after the invoice holding it was finalized with another total: the customer was billed a different figure. A signed stripe.late_usage webhook carries it; `tally stripe status` shows the record invoice-finalized (docs/stripe.md#late-usage).',
    metric: tallyMetric('StripeLateUsage', 'StripeSenderLambdaFunction'),
    statistic: 'Sum',
    period: 300,
    above: 0,
  },
  StripeMeterErrorsAlarm: {
    name: 'stripe-meter-errors',
    description:
      'Stripe answered 200 to meter events and dropped them later (its meter error reports: customer not found, invalid value, timestamp too old): they reach no invoice. `tally stripe status` lists them with the account, metric and day (docs/stripe.md#limits). Read by the sender\'s hourly schedule.',
    metric: tallyMetric('StripeMeterErrors', 'StripeSenderLambdaFunction'),
    statistic: 'Sum',
    period: 300,
    above: 0,
  },
  StripeDeadLetterQueueDepthAlarm: {
    name: 'stripe-dlq-not-empty',
    description:
      'Stripe send work failed through every retry (Stripe unreachable for hours?) and reached the Stripe dead-letter queue; the outbox keeps the records pending: run `tally stripe push`, then purge the DLQ.',
    metric: queueMetric('ApproximateNumberOfMessagesVisible', 'StripeDeadLetterQueue'),
    statistic: 'Maximum',
    period: 60,
    above: 0,
  },
  StripeBacklogAlarm: {
    name: 'stripe-backlog',
    description: 'A Stripe send message has waited more than an hour: Stripe is failing or busy and events are being retried.',
    metric: queueMetric('ApproximateAgeOfOldestMessage', 'StripeQueue'),
    statistic: 'Maximum',
    period: 300,
    above: 3600,
  },
  UsageTableThrottlesAlarm: {
    name: 'usage-table-throttles',
    description: 'DynamoDB throttled requests on the usage table (a hot account-day? raise TALLY_SHARDS only for new days).',
    metric: usageTableThrottles(['GetItem', 'PutItem', 'UpdateItem', 'Query', 'BatchWriteItem', 'DeleteItem']),
    statistic: 'Sum',
    period: 300,
    above: 0,
  },
};

const dimensionList = (dimensions) => Object.entries(dimensions).map(([Name, Value]) => ({ Name, Value }));

/**
 * One alarm as a CloudFormation resource: a single metric, or the sum of several
 * (metric math), compared with a threshold it must stay `below` or not go `above`.
 *
 * @param {AlarmSpec} spec
 */
function alarmResource(spec) {
  if ((spec.above === undefined) === (spec.below === undefined)) {
    throw new Error(`alarm ${spec.name}: give exactly one of "above" or "below"`);
  }
  const metric =
    'expression' in spec.metric
      ? {
          Metrics: [
            { Id: 'total', Label: spec.metric.label, Expression: spec.metric.expression, ReturnData: true },
            ...Object.entries(spec.metric.metrics).map(([Id, m]) => ({
              Id,
              ReturnData: false,
              MetricStat: {
                Stat: spec.statistic,
                Period: spec.period,
                Metric: { Namespace: m.namespace, MetricName: m.name, Dimensions: dimensionList(m.dimensions) },
              },
            })),
          ],
        }
      : {
          Namespace: spec.metric.namespace,
          MetricName: spec.metric.name,
          Dimensions: dimensionList(spec.metric.dimensions),
          Statistic: spec.statistic,
          Period: spec.period,
        };
  return {
    Type: 'AWS::CloudWatch::Alarm',
    Properties: {
      AlarmName: `\${self:custom.names.prefix}-${spec.name}`,
      AlarmDescription: spec.description,
      ...metric,
      EvaluationPeriods: spec.evaluationPeriods ?? 1,
      Threshold: spec.above ?? spec.below,
      ComparisonOperator: spec.above !== undefined ? 'GreaterThanThreshold' : 'LessThanThreshold',
      TreatMissingData: spec.treatMissingData ?? 'notBreaching',
      AlarmActions: [{ Ref: 'AlarmTopic' }],
      OKActions: [{ Ref: 'AlarmTopic' }],
    },
  };
}

/** Every alarm as CloudFormation resources, by logical id. */
function alarmResources(alarms = ALARMS) {
  return Object.fromEntries(Object.entries(alarms).map(([id, spec]) => [id, alarmResource(spec)]));
}

module.exports = {
  // For serverless.yml.
  resources: () => alarmResources(),
  // For the tests and for reading.
  ALARMS,
  alarmResource,
  alarmResources,
  tallyMetric,
};
