import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { readMetricRules } from '../adapters/config';
import type { Env } from '../adapters/env';
import { MAX_STACK_FILE_BYTES, readSmallTextFile } from '../adapters/small-file';
import { describeMetricRule, type MetricRule } from '../domain/logs/metric-rules';
import type { LocalStackInfo } from '../local/stack';
import { isAlive, readHolder } from '../local/lifecycle/stack-lock';

/** The resolver and metric rules `tally count` counts with, each with where it came from. */
export interface CountSettingsChoice {
  readonly resolver: string;
  readonly resolverFrom: string;
  /** TALLY_METRICS text; undefined: no rules (requests and bytes only). */
  readonly metrics: string | undefined;
  readonly metricsFrom: string;
  /** What the console should know besides: a running stack that counts otherwise, a stack file left by a stopped one. */
  readonly notes: readonly string[];
}

/** The default resolver, as the consumer has it (`readConfig`). */
const DEFAULT_RESOLVER = 'host-label';

/**
 * The counting settings of the local stack running here: the consumer settings
 * `npm start` recorded in `.tally/local.json` (`TALLY_LOCAL_STACK` names another file),
 * when the process holding the folder's lock is alive. A file left by a stopped stack
 * is not used (a note says so).
 */
function runningStack(env: Env, cwd: string): { consumer: Record<string, string>; shown: string } | { stale: string } | undefined {
  const given = env.TALLY_LOCAL_STACK;
  const path = given !== undefined && given !== '' ? (isAbsolute(given) ? given : join(cwd, given)) : join(cwd, '.tally', 'local.json');
  if (!existsSync(path)) return undefined;
  const relativePath = relative(cwd, path);
  const shown = relativePath.startsWith('..') || isAbsolute(relativePath) ? path : relativePath;
  const holder = readHolder(join(dirname(path), 'lock.json'));
  if (holder === undefined || !isAlive(holder)) return { stale: shown };
  try {
    const info = JSON.parse(readSmallTextFile(path, MAX_STACK_FILE_BYTES)) as LocalStackInfo;
    return { consumer: info.consumer ?? {}, shown };
  } catch {
    return { stale: shown };
  }
}

/**
 * Chooses what `tally count` counts with, in the order every operator command uses
 * (docs/operations.md): the flag, else the environment (`TALLY_RESOLVER`,
 * `TALLY_METRICS`), else the consumer settings of the local stack running here, else
 * the defaults (host-label, no metric rules). So a file counted here counts as the
 * running stack counts it, and when a flag or variable makes it count otherwise, a
 * note says so.
 */
export function chooseCountSettings(flags: { readonly resolver?: string; readonly metrics?: string }, env: Env, cwd: string): CountSettingsChoice {
  const stack = runningStack(env, cwd);
  const consumer = stack !== undefined && 'consumer' in stack ? stack.consumer : undefined;
  const stackName = stack === undefined ? '' : 'consumer' in stack ? `the running local stack (${stack.shown})` : '';
  const pick = (flag: string | undefined, flagName: string, variable: string): { value: string | undefined; from: string } => {
    if (flag !== undefined) return { value: flag, from: flagName };
    const fromEnv = env[variable];
    if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, from: variable };
    if (consumer !== undefined) return { value: consumer[variable], from: stackName };
    return { value: undefined, from: 'the default' };
  };
  const resolver = pick(flags.resolver, '--resolver', 'TALLY_RESOLVER');
  const metrics = pick(flags.metrics, '--metrics', 'TALLY_METRICS');
  const notes: string[] = [];
  if (stack !== undefined && 'stale' in stack) notes.push(`note: ${stack.stale} was left by a local stack that is not running: its settings are not used`);
  if (consumer !== undefined) {
    const stackResolver = consumer.TALLY_RESOLVER ?? DEFAULT_RESOLVER;
    if ((resolver.value ?? DEFAULT_RESOLVER) !== stackResolver) {
      notes.push(`note: ${stackName} resolves accounts with ${preview(stackResolver)}, not this: its counts may differ`);
    }
    if (!sameRules(metrics.value, consumer.TALLY_METRICS)) {
      notes.push(`note: ${stackName} counts with other metric rules (${describeRules(readMetricRules(consumer.TALLY_METRICS))}): its counts differ from these`);
    }
  }
  return {
    resolver: resolver.value ?? DEFAULT_RESOLVER,
    resolverFrom: resolver.from,
    metrics: metrics.value,
    metricsFrom: consumer === undefined && metrics.from === 'the default' ? 'the default: no --metrics or TALLY_METRICS, and no local stack running here' : metrics.from,
    notes,
  };
}

/** Whether two TALLY_METRICS texts give the same rules (a text that does not parse is compared as text). */
function sameRules(a: string | undefined, b: string | undefined): boolean {
  try {
    return JSON.stringify(readMetricRules(a)) === JSON.stringify(readMetricRules(b));
  } catch {
    return a === b;
  }
}

/** The rules in words, or that there are none. */
export function describeRules(rules: readonly MetricRule[]): string {
  return rules.length === 0 ? 'none: requests and bytes only' : rules.map(describeMetricRule).join('; ');
}

/**
 * The lines `tally count` prints before its counts: the resolver and the metric rules
 * it applied, each with where it came from, then any notes.
 */
export function describeCountSettings(choice: CountSettingsChoice, rules: readonly MetricRule[]): string[] {
  return [
    `resolver ${preview(choice.resolver)} (from ${choice.resolverFrom})`,
    `metric rules (from ${choice.metricsFrom}): ${describeRules(rules)}`,
    ...choice.notes,
  ];
}

/** A setting's text, cut for the console (a host map may be long). */
function preview(text: string): string {
  return text.length > 100 ? `${text.slice(0, 100)}...` : text;
}
