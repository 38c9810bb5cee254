// Preloaded (NODE_OPTIONS=--require) into a child process a test measures: prints the process's peak resident set size on exit, in KiB.
process.on('exit', () => process.stderr.write(`max-rss-kib ${process.resourceUsage().maxRSS}\n`));
