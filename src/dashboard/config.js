// Deployment settings for the dashboard. Replace this file when deploying the
// dashboard to a host other than the one serving the usage API.
//   apiBaseUrl: '' means the API is on this origin under /v1/ (the default).
window.TALLY_CONFIG = { apiBaseUrl: '' };
