import { isValidAccountId } from '../account-id';
import { AccountNotFoundError, AuthenticationError } from '../errors';

/** The scope that lets a token read every account (operators, finance). */
export const ADMIN_SCOPE = 'usage:admin';

/**
 * What a verified token lets its bearer read. Built from the claims
 *
 * ```
 * { "sub": "dashboard", "accounts": ["acme", "globex"] }     two accounts
 * { "sub": "finance",   "scope": "usage:admin" }             every account
 * ```
 */
export interface AccessGrant {
  /** `sub` of the token, for logs; never the token itself. */
  readonly subject?: string;
  readonly accounts: readonly string[];
  readonly admin: boolean;
}

/**
 * Reads the grant from verified claims. A claim of the wrong type makes the token
 * unusable (401), so that a token minted by a broken tool never half-works.
 */
export function grantFromClaims(claims: Readonly<Record<string, unknown>>): AccessGrant {
  const accounts = claims.accounts ?? [];
  if (!Array.isArray(accounts) || !accounts.every((id): id is string => typeof id === 'string' && isValidAccountId(id))) {
    throw new AuthenticationError('invalid_token', 'the token\'s "accounts" claim must be a list of account ids');
  }
  const scope = claims.scope ?? '';
  if (typeof scope !== 'string') throw new AuthenticationError('invalid_token', 'the token\'s "scope" claim must be a string');
  const subject = typeof claims.sub === 'string' ? claims.sub : undefined;
  return {
    ...(subject === undefined ? {} : { subject }),
    accounts: [...new Set(accounts)],
    admin: scope.split(' ').includes(ADMIN_SCOPE),
  };
}

/** True when the grant covers `accountId` (exact, case-sensitive: ids are table keys). */
export function mayRead(grant: AccessGrant, accountId: string): boolean {
  return grant.admin || grant.accounts.includes(accountId);
}

/**
 * Refuses an account the grant does not cover with the very error an unknown account
 * gets, so that a token for one tenant learns nothing about another. Decided before
 * any read, so the answer takes no longer or shorter either.
 */
export function authorizeAccount(grant: AccessGrant, accountId: string): void {
  if (!mayRead(grant, accountId)) throw new AccountNotFoundError();
}
