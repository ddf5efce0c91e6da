// Lint: the one rule the codebase holds itself to beyond the compiler, TigerBeetle's limit of 70
// lines per function (blank lines and comments not counted), in the server and in the code that
// drives it: the benchmarks, the scripts and the worker's tasks. `npm run lint` reports every
// function over it.
import tseslint from 'typescript-eslint';

export default tseslint.config({
  files: ['server/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', 'tasks/**/*.ts'],
  languageOptions: { parser: tseslint.parser },
  rules: {
    'max-lines-per-function': ['error', { max: 70, skipBlankLines: true, skipComments: true, IIFEs: true }],
  },
});
