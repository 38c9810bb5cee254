/**
 * `npm run chaos -- --objects N --seed S [--consumers C] [--profile hot] [--skew MINUTES]
 * [--haunt-every N]` (docs/reliability.md says what each does): a chaos run on a fresh
 * local stack (DynamoDB Local + SQS/S3 emulator). Prints the seed, the faults by kind
 * and a last line `seed S: N objects, F faults, drift D, hours drift H` (the days'
 * counters and their sums by UTC hour against the recount); exits 1 on any drift.
 */
import { parseArgs } from 'node:util';
import { startLocalStack } from '../../src/local/stack';
import { runChaos } from './run-chaos';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const USAGE = 'usage: npm run chaos -- --objects N --seed S [--consumers C] [--profile default|hot] [--hold HOT_INCREMENTS] [--duplicates RATE] [--skew MINUTES] [--haunt-every N] [--cap HISTORY_CAP]';

const CHAOS_OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  objects: { type: 'string', default: '1000' },
  seed: { type: 'string', default: String(Math.floor(Math.random() * 1_000_000)) },
  consumers: { type: 'string', default: '3' },
  profile: { type: 'string', default: 'default' },
  hold: { type: 'string', default: '1000' },
  duplicates: { type: 'string', default: '0.15' },
  skew: { type: 'string', default: '4' },
  'haunt-every': { type: 'string', default: '50' },
  cap: { type: 'string' },
} as const;

/** The options, or the exit code when there is nothing to run: 0 after `--help`, 2 (with the usage) for a flag it does not know. */
function readArgs() {
  try {
    const { values } = parseArgs({ options: CHAOS_OPTIONS });
    if (values.help === true) {
      console.log(USAGE);
      return 0;
    }
    return values;
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
}

async function main(): Promise<number> {
  const values = readArgs();
  if (typeof values === 'number') return values;
  const seed = Number(values.seed);
  const objects = Number(values.objects);
  const skew = Number(values.skew);
  const hauntEvery = Number(values['haunt-every']);
  if (!Number.isInteger(seed) || !Number.isInteger(objects) || objects < 1 || (values.profile !== 'default' && values.profile !== 'hot') || !(skew >= 0 && skew <= 60) || !Number.isInteger(hauntEvery) || hauntEvery < 0) {
    console.error(USAGE);
    return 2;
  }
  console.log(`chaos: seed ${seed} (rerun with --seed ${seed})`);
  const maxReceiveCount = 3;
  const stack = await startLocalStack({ visibilityTimeoutSeconds: 1, maxReceiveCount });
  const started = Date.now();
  try {
    const report = await runChaos({
      seed,
      objects,
      consumers: Number(values.consumers),
      profile: values.profile as 'default' | 'hot',
      holdIncrements: Number(values.hold),
      duplicateRate: Number(values.duplicates),
      clockSkewMinutes: skew,
      hauntEvery,
      ...(values.cap === undefined ? {} : { historyCap: Number(values.cap) }),
      info: { ...stack.info, maxReceiveCount },
      log: (line) => console.log(`chaos: [${((Date.now() - started) / 1000).toFixed(0)} s] ${line}`),
    });
    console.log(`faults by kind: ${Object.entries(report.faults).map(([kind, n]) => `${kind} ${n}`).join(', ')}`);
    const { expected, ledger } = report.lines;
    console.log(`lines: read ${ledger.read} = counted ${ledger.counted} + unattributed ${ledger.unattributed} + malformed ${ledger.malformed} (generated: read ${expected.read})`);
    if (report.heldBack) console.log(`held back: ${report.heldBack.redeliveries} redeliveries after a crash; hot increments in between: fewest ${report.heldBack.fewest}, median ${report.heldBack.median}`);
    if (report.shardChange) console.log(`shard change: TALLY_SHARDS=${report.shardChange.schedule} midway; shards found per day: ${JSON.stringify(report.shardChange.shardsByDay)}; ${report.shardChange.straddling} objects of the next day with usage on both`);
    console.log(`clocks (minutes off the store's): consumers ${report.clocks.consumers.map((m) => m.toFixed(1)).join(', ')}; inline backfill ${report.clocks.inlineBackfill.toFixed(1)}, inline replay ${report.clocks.inlineReplay.toFixed(1)}`);
    console.log(`haunted: ${report.haunted.objects} objects, ${report.haunted.deaths} unseen deaths (at most ${report.haunted.mostDeaths} for one)`);
    const ib = report.inlineBackfill;
    console.log(`inline backfill beside the consumers: ${ib.runs} run(s), counted ${ib.counted} (applied ${ib.applied}, duplicates ${ib.duplicates}), already counted ${ib.alreadyCounted}, failed ${ib.failed}`);
    const ex = report.expiry;
    console.log(`expiry: ${ex.expiredFromDlq} haunted messages expired in the DLQ; ${ex.clockDays.toFixed(1)} days on (horizon 58), ${ex.swept} expired items swept; the backfill of every day sent ${ex.horizonBackfillSent}, already counted ${ex.horizonBackfillAlreadyCounted}`);
    console.log(`largest history ${report.history.maxKeys} keys, keys dropped (each tombstoned) ${report.history.drops}, increments unresolved ${report.history.unresolved}`);
    console.log(`DLQ after replay: ${report.dlqAfterReplay}; ${((Date.now() - started) / 1000).toFixed(1)} s`);
    for (const drift of report.drift.slice(0, 20)) console.log(`drift: ${JSON.stringify(drift)}`);
    for (const drift of report.hoursDrift.slice(0, 20)) console.log(`hours drift: ${JSON.stringify(drift)}`);
    for (const twice of report.appliedTwice.slice(0, 20)) console.log(`applied twice: ${JSON.stringify(twice)}`);
    console.log(report.summary);
    return report.drift.length === 0 && report.hoursDrift.length === 0 && report.appliedTwice.length === 0 && report.dlqAfterReplay === 0 ? 0 : 1;
  } finally {
    await stack.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
