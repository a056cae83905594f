// The builtin fs module plus globSync (Node >= 22 has it natively; Node 20 does not). The fallback
// is the `glob` package's globSync, which takes the same (pattern, {cwd}) arguments the
// conformance suite's tier-check passes.
import fs from 'node:fs';
import { globSync as globPackageSync } from 'glob';

export * from 'node:fs';
export default fs;
export const globSync =
    typeof fs.globSync === 'function' ? fs.globSync : (pattern, options) => globPackageSync(pattern, options || {});
