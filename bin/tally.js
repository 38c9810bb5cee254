#!/usr/bin/env node
'use strict';
// The CLI is bundled by `npm ci` (the prepare script) into dist/cli.js.
require('../dist/cli.js');
