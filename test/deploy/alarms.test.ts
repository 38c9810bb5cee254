// The alarm generator behind serverless.yml's alarms (scripts/serverless/alarms.js): what
// one entry becomes. The packaged template's alarms are checked in serverless-template.test.ts.

interface AlarmSpec {
  name: string;
  description: string;
  metric: unknown;
  statistic: string;
  period: number;
  above?: number | string;
  below?: number | string;
}
interface AlarmsModule {
  ALARMS: Record<string, AlarmSpec>;
  alarmResource(spec: AlarmSpec): { Type: string; Properties: Record<string, unknown> };
  alarmResources(alarms?: Record<string, AlarmSpec>): Record<string, { Type: string; Properties: Record<string, unknown> }>;
  tallyMetric(name: string, functionId?: string): unknown;
}
const { ALARMS, alarmResource, alarmResources, tallyMetric } = require('../../scripts/serverless/alarms.js') as AlarmsModule;

describe('alarm entries', () => {
  it('turn an alarm on a metric Tally publishes, breaching below a param, into one CloudWatch alarm', () => {
    const alarm = alarmResource({
      name: 'history-horizon',
      description: 'A shard history forgets keys sooner than a redelivery can come back.',
      metric: tallyMetric('HistoryHorizonSeconds'),
      statistic: 'Minimum',
      period: 300,
      below: '${param:redeliveryWindowSeconds}',
    });

    expect(alarm).toEqual({
      Type: 'AWS::CloudWatch::Alarm',
      Properties: {
        AlarmName: '${self:custom.names.prefix}-history-horizon',
        AlarmDescription: 'A shard history forgets keys sooner than a redelivery can come back.',
        Namespace: 'Tally',
        MetricName: 'HistoryHorizonSeconds',
        Dimensions: [
          { Name: 'service', Value: 'tally-ingest' },
          { Name: 'FunctionName', Value: { Ref: 'IngestLambdaFunction' } },
        ],
        Statistic: 'Minimum',
        Period: 300,
        EvaluationPeriods: 1,
        Threshold: '${param:redeliveryWindowSeconds}',
        ComparisonOperator: 'LessThanThreshold',
        TreatMissingData: 'notBreaching',
        AlarmActions: [{ Ref: 'AlarmTopic' }],
        OKActions: [{ Ref: 'AlarmTopic' }],
      },
    });
  });

  it.each([
    ['neither', {}],
    ['both', { above: 0, below: 1 }],
  ])('refuse an entry with %s of above and below', (_case, bounds) => {
    const spec = { name: 'x', description: 'x', metric: tallyMetric('X'), statistic: 'Sum', period: 60, ...bounds };
    expect(() => alarmResource(spec)).toThrow('give exactly one of "above" or "below"');
  });

  it('name every alarm once', () => {
    const names = Object.values(ALARMS).map((spec) => spec.name);
    expect(new Set(names).size).toBe(names.length);
    expect(Object.keys(alarmResources())).toEqual(Object.keys(ALARMS));
  });
});
