// Jest transformer: Node's own type stripping, the same thing the runtime does for `node server/main.ts`.
// Positions are preserved (types become spaces), so stack traces need no source maps.
const { stripTypeScriptTypes } = require('node:module');
const { createHash } = require('node:crypto');

module.exports = {
  process(sourceText, sourcePath) {
    if (!sourcePath.endsWith('.ts')) return { code: sourceText };
    return { code: stripTypeScriptTypes(sourceText, { mode: 'strip', sourceUrl: sourcePath }) };
  },
  getCacheKey(sourceText, sourcePath) {
    return createHash('sha256').update(process.version).update(sourcePath).update(sourceText).digest('hex');
  },
};
