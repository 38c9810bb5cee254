/**
 * Account ids become part of DynamoDB keys (`ACCT#<id>`), API paths and CSV files.
 * Only a conservative alphabet is accepted so that no id can carry a key separator
 * (`#`), a path segment (`/`, `..`) or a formula prefix.
 */
const ACCOUNT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The pseudo-account that receives lines no resolver could attribute. */
export const UNATTRIBUTED = 'unattributed';

export const ACCOUNT_ID_RULE =
  'an account id is 1-64 characters of letters, digits, ".", "_" or "-", starting with a letter or digit';

/** True for ids that are safe in keys, URLs and CSV cells. */
export function isValidAccountId(value: string): boolean {
  return ACCOUNT_ID.test(value) && !value.includes('..');
}
