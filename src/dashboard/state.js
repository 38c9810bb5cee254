// The page's one mutable state. main.js changes it; the views only read what they are given.
export const state = {
  /** The bearer token in use, and its claims (lib/claims). */
  token: null,
  claims: null,
  /** The last report the API answered, and the query ({ account, from, to, granularity }) it answers. */
  report: null,
  loaded: null,
  /** The AbortController of the request in flight. */
  inflight: null,
  /** The AbortController of the day explanation being fetched. */
  explaining: null,
  expiryTimer: null,
};
