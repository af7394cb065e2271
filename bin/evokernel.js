#!/usr/bin/env node
// The installed command: the compiled CLI does the work (npm run build first).
import "../dist/runner/src/cli.js";
