// Module resolution hook (registered by fs-globsync-register.mjs): when code inside
// @modelcontextprotocol/conformance imports "fs", it gets fs-with-globsync.mjs instead. Other
// importers are untouched.
const shim = new URL('./fs-with-globsync.mjs', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL &&
      context.parentURL.includes('/@modelcontextprotocol/conformance/')) {
    return { url: shim, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
