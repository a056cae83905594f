// Preload for Node 20: `node --import ./fs-globsync-register.mjs <conformance>/dist/index.js`.
// @modelcontextprotocol/conformance 0.1.16 imports { globSync } from "fs", added in Node 22.
import { register } from 'node:module';

register('./fs-globsync-hook.mjs', import.meta.url);
