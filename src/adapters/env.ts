/**
 * Environment variables as read by `readConfig` and the CLI: `process.env`, or any
 * map a test or an operator command passes instead. Nothing reads `process.env`
 * except entry points, which hand it over as an `Env`.
 */
export type Env = Readonly<Record<string, string | undefined>>;
