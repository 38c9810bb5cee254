// The page's one mutable state. main.js changes it; the views only read what they are given.
export const state = {
  /** The bearer token in use, and its claims (lib/claims). */
  token: null,
  claims: null,
  /** The last report the API answered, and the query ({ account, from, to, granularity, tz }) it answers. */
  report: null,
  loaded: null,
  /** The AbortController of the request in flight. */
  inflight: null,
  /** The AbortController of the day explanation being fetched. */
  explaining: null,
  expiryTimer: null,
  /** The IANA zone days are shown in, the selector's options, and each account's own zone (null: none) once a report said. */
  zone: 'UTC',
  zoneOptions: [],
  accountZones: new Map(),
  /** The hours of the loaded range (granularity=hour), when the range chart draws hours. */
  rangeHours: null,
  /** The day whose hours card is open ({ day, zone, report }), and the request fetching it. */
  hoursShown: null,
  hoursLoading: null,
};
