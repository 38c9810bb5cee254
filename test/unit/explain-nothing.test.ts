import { describeExplanation } from '../../src/cli/commands/reading/explain';
import { buildExplanation } from '../../src/domain/reading/explanation';

/**
 * tryout: `tally explain --account ACME --day 2026-11-21` (the account is `acme`) printed
 * zeros and "complete", like a quiet day: Tally keeps no account registry, so nothing
 * told the operator that the id matched nothing.
 */
describe('tally explain of an account-day with nothing recorded', () => {
  it('says that nothing is recorded and that account ids are exact', () => {
    const said = describeExplanation(buildExplanation({ accountId: 'ACME', day: '2026-11-21', records: [], sources: [], metricNames: ['requests', 'bytes'] }));

    expect(said).toContain('nothing recorded for ACME on 2026-11-21: no log object, counter, adjustment or revision (account ids are exact: case counts)');
  });

  it('says nothing of the kind for a day with usage', () => {
    const source = { bucket: 'logs', key: 'cf/E2A.2026-11-21-00.a.gz', etag: 'e', format: 'standard' as const, processedAt: '2026-11-21T01:00:00.000Z', metrics: { requests: 0, bytes: 0 } };
    const said = describeExplanation(buildExplanation({ accountId: 'acme', day: '2026-11-21', records: [], sources: [source], metricNames: ['requests', 'bytes'] }));

    expect(said).not.toContain('nothing recorded');
  });
});
