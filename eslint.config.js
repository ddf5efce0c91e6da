// Lint: the one rule the codebase holds itself to beyond the compiler, TigerBeetle's limit of 70
// lines per function in server code (blank lines and comments not counted). `npm run lint` reports
// every function over it.
import tseslint from 'typescript-eslint';

export default tseslint.config({
  files: ['server/**/*.ts'],
  languageOptions: { parser: tseslint.parser },
  rules: {
    'max-lines-per-function': ['error', { max: 70, skipBlankLines: true, skipComments: true, IIFEs: true }],
  },
});
