import { Metrics } from '@aws-lambda-powertools/metrics';
import { HistoryGauge } from '../../src/app/ingest/history-gauge';
import { INGEST_SERVICE, METRICS_NAMESPACE, publishHistoryMetrics } from '../../src/adapters/history-metrics';

/** Runs `publish` and returns the EMF documents it wrote to stdout. */
function captureEmf(publish: () => void): Record<string, unknown>[] {
  const lines: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    publish();
  } finally {
    spy.mockRestore();
  }
  return lines.flatMap((line) => line.split('\n')).filter((line) => line.trim().startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('history horizon metrics (embedded metric format)', () => {
  const metrics = () => {
    const m = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: INGEST_SERVICE });
    m.setDefaultDimensions({ FunctionName: 'tally-prod-ingest' });
    return m;
  };

  it('publishes the shortest time a dropped key was kept, the largest history, the drops and the unresolved increments', () => {
    const gauge = new HistoryGauge();
    gauge.observe({ keys: 47, dropped: false });
    gauge.observe({ keys: 48, droppedAgeSeconds: 3000, dropped: true });
    gauge.observe({ keys: 480, droppedAgeSeconds: 600, dropped: true });
    gauge.unresolvedIncrement();

    const [emf] = captureEmf(() => publishHistoryMetrics(metrics(), gauge.drain()));

    expect(emf).toMatchObject({ HistoryHorizonSeconds: 600, HistoryKeys: 480, HistoryDrops: 2, UnresolvedIncrements: 1, service: INGEST_SERVICE, FunctionName: 'tally-prod-ingest' });
    const directive = (emf!._aws as { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] }).CloudWatchMetrics[0]!;
    expect(directive.Namespace).toBe('Tally');
    expect(directive.Dimensions[0]!.sort()).toEqual(['FunctionName', 'service']);
    expect(directive.Metrics).toContainEqual({ Name: 'HistoryHorizonSeconds', Unit: 'Seconds' });
  });

  it('publishes an unresolved increment even when nothing was applied', () => {
    const gauge = new HistoryGauge();
    gauge.unresolvedIncrement();

    const [emf] = captureEmf(() => publishHistoryMetrics(metrics(), gauge.drain()));

    expect(emf).toMatchObject({ UnresolvedIncrements: 1, HistoryKeys: 0 });
  });

  it('leaves the horizon out when no key was dropped, and writes nothing without writes', () => {
    const gauge = new HistoryGauge();
    gauge.observe({ keys: 3, dropped: false });

    const [emf] = captureEmf(() => publishHistoryMetrics(metrics(), gauge.drain()));
    const empty = captureEmf(() => publishHistoryMetrics(metrics(), gauge.drain()));

    expect(emf).toMatchObject({ HistoryKeys: 3, HistoryDrops: 0, UnresolvedIncrements: 0 });
    expect(emf).not.toHaveProperty('HistoryHorizonSeconds');
    expect(empty).toEqual([]);
  });
});
