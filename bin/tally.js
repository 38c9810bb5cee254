#!/usr/bin/env node
'use strict';
// dist/cli.js is bundled by the prepare script, which `npm ci` runs.
require('../dist/cli.js').main();
