import { execFile } from 'node:child_process';
import { copyFileSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/** The parts of a CloudFormation template the deployment tests read. */
export interface Template {
  Description?: string;
  Conditions?: Record<string, unknown>;
  Resources: Record<string, Resource>;
  Outputs?: Record<string, { Value: unknown; Description?: string }>;
}

export interface Resource {
  Type: string;
  Condition?: string;
  DependsOn?: string | string[];
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
  // Tests read deep into resource properties; `any` keeps those reads terse.
  Properties: any;
}

export interface PolicyStatement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Principal?: unknown;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

export interface PackagedStack {
  /** The template exactly as `serverless package` wrote it. */
  readonly raw: Template;
  /** The template with its (package-time) conditions applied: what CloudFormation would create. */
  readonly effective: Template;
  /** Files `serverless package` wrote (templates and function zips). */
  readonly files: readonly string[];
  readonly directory: string;
}

const repoRoot = path.resolve(__dirname, '../..');
const run = promisify(execFile);

/** Entries of the repository a packaging must not share with another one running at the same time. */
const PER_PACKAGING = new Set(['.git', '.serverless', '.esbuild', 'serverless.yml']);

/**
 * Runs `serverless package` (osls) on the repository's serverless.yml, offline: no AWS
 * variables, and a HOME without `~/.aws`, so a credential lookup would fail the run.
 *
 * osls stages its output in `<service>/.serverless` whatever `--package` says, so each
 * packaging runs in a service directory of its own: a copy of serverless.yml beside
 * links to everything else in the repository. Packagings (and `npm run package` in the
 * repository) can then run at the same time.
 */
export async function packageStack(args: readonly string[]): Promise<PackagedStack> {
  const directory = mkdtempSync(path.join(tmpdir(), 'tally-package-'));
  const service = path.join(directory, 'service');
  mkdirSync(service);
  for (const entry of readdirSync(repoRoot)) {
    if (!PER_PACKAGING.has(entry)) symlinkSync(path.join(repoRoot, entry), path.join(service, entry));
  }
  copyFileSync(path.join(repoRoot, 'serverless.yml'), path.join(service, 'serverless.yml'));
  const home = path.join(directory, 'home');
  mkdirSync(home);
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('AWS_')) env[name] = value;
  }
  env.HOME = home;
  env.TALLY_ESBUILD_WORK_FOLDER = '.esbuild';
  const out = path.join(directory, 'package');
  try {
    await run(process.execPath, [require.resolve('osls/bin/serverless.js'), 'package', '--package', out, ...args], {
      cwd: service,
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    removeDirectory(directory);
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`serverless package ${args.join(' ')} failed:\n${stdout ?? ''}\n${stderr ?? ''}`, { cause: error });
  }
  const raw = JSON.parse(readFileSync(path.join(out, 'cloudformation-template-update-stack.json'), 'utf8')) as Template;
  return { raw, effective: applyConditions(raw), files: readdirSync(out), directory: out };
}

/** Removes a packaging's temporary directory. */
export function removePackage(stack: PackagedStack | undefined): void {
  if (stack !== undefined) removeDirectory(path.dirname(stack.directory));
}

/** Unlinks the links first (never touching what they point to), then removes the rest. */
function removeDirectory(directory: string): void {
  const service = path.join(directory, 'service');
  for (const entry of readdirSync(service)) {
    const link = path.join(service, entry);
    if (lstatSync(link).isSymbolicLink()) unlinkSync(link);
  }
  rmSync(directory, { recursive: true, force: true });
}

type Json = unknown;

function isObject(value: Json): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const NO_VALUE = Symbol('AWS::NoValue');

/**
 * Evaluates the template's conditions (osls resolves params at package time, so every
 * `Fn::Equals` compares literals), drops resources and outputs whose condition is
 * false, replaces each `Fn::If` with the branch taken and splits literal `Fn::Split`s.
 */
export function applyConditions(template: Template): Template {
  const conditions = template.Conditions ?? {};
  const cache = new Map<string, boolean>();
  const condition = (name: string): boolean => {
    if (!cache.has(name)) {
      if (!(name in conditions)) throw new Error(`unknown condition ${name}`);
      cache.set(name, evaluate(conditions[name]));
    }
    return cache.get(name)!;
  };
  const evaluate = (expression: Json): boolean => {
    if (!isObject(expression)) throw new Error(`not a condition: ${JSON.stringify(expression)}`);
    if ('Condition' in expression) return condition(expression.Condition as string);
    if ('Fn::Not' in expression) return !evaluate((expression['Fn::Not'] as Json[])[0]);
    if ('Fn::And' in expression) return (expression['Fn::And'] as Json[]).every(evaluate);
    if ('Fn::Or' in expression) return (expression['Fn::Or'] as Json[]).some(evaluate);
    if ('Fn::Equals' in expression) {
      const [left, right] = expression['Fn::Equals'] as Json[];
      if (typeof left !== 'string' || typeof right !== 'string') {
        throw new Error(`Fn::Equals on a value known only at deploy time: ${JSON.stringify(expression)}`);
      }
      return left === right;
    }
    throw new Error(`unsupported condition ${JSON.stringify(expression)}`);
  };
  const resolve = (value: Json): Json | typeof NO_VALUE => {
    if (Array.isArray(value)) return value.map(resolve).filter((item) => item !== NO_VALUE);
    if (!isObject(value)) return value;
    if (Object.keys(value).length === 1 && value.Ref === 'AWS::NoValue') return NO_VALUE;
    if ('Fn::Split' in value) {
      const [delimiter, source] = value['Fn::Split'] as [string, Json];
      if (typeof source === 'string') return source.split(delimiter);
    }
    if ('Fn::If' in value) {
      const [name, whenTrue, whenFalse] = value['Fn::If'] as [string, Json, Json];
      return resolve(condition(name) ? whenTrue : whenFalse);
    }
    const result: Record<string, Json> = {};
    for (const [key, item] of Object.entries(value)) {
      const resolved = resolve(item);
      if (resolved !== NO_VALUE) result[key] = resolved;
    }
    return result;
  };
  const keep = <T extends { Condition?: string }>(entries: Record<string, T>): Record<string, T> =>
    Object.fromEntries(
      Object.entries(entries)
        .filter(([, entry]) => entry.Condition === undefined || condition(entry.Condition))
        .map(([key, entry]) => [key, resolve(entry) as T]),
    );
  return {
    ...template,
    Resources: keep(template.Resources),
    ...(template.Outputs ? { Outputs: keep(template.Outputs as Record<string, { Value: unknown; Condition?: string }>) } : {}),
  };
}

/** Resources of one type, by logical id. */
export function resourcesOfType(template: Template, type: string): Record<string, Resource> {
  return Object.fromEntries(Object.entries(template.Resources).filter(([, resource]) => resource.Type === type));
}

/** Every policy document in the template, named by where it sits. */
export function policyDocuments(template: Template): { where: string; statements: PolicyStatement[] }[] {
  const documents: { where: string; statements: PolicyStatement[] }[] = [];
  for (const [id, resource] of Object.entries(template.Resources)) {
    if (resource.Type === 'AWS::IAM::Role') {
      for (const policy of resource.Properties.Policies ?? []) {
        documents.push({ where: `${id}/${policy.PolicyName}`, statements: policy.PolicyDocument.Statement });
      }
      documents.push({ where: `${id}/AssumeRolePolicyDocument`, statements: resource.Properties.AssumeRolePolicyDocument.Statement });
    }
    if (resource.Type === 'AWS::IAM::Policy' || resource.Type === 'AWS::IAM::ManagedPolicy') {
      documents.push({ where: id, statements: resource.Properties.PolicyDocument.Statement });
    }
    if (['AWS::S3::BucketPolicy', 'AWS::SQS::QueuePolicy', 'AWS::SNS::TopicPolicy'].includes(resource.Type)) {
      documents.push({ where: id, statements: resource.Properties.PolicyDocument.Statement });
    }
  }
  return documents;
}

/** Every string inside a value, through intrinsic functions (`Fn::Sub` templates included). */
export function stringsIn(value: Json): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (isObject(value)) return Object.values(value).flatMap(stringsIn);
  return [];
}

export function asList<T>(value: T | T[]): T[] {
  return Array.isArray(value) ? value : [value];
}
