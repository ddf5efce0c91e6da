// Lint: the rules the codebase holds itself to beyond the compiler (`npm run lint`).
//
// 1. TigerBeetle's limit of 70 lines per function (blank lines and comments not counted), in the
//    server, in the code that drives it (the benchmarks, the scripts, the worker's tasks) and in its
//    two clients: the web client (web/) and the example agent (examples/).
// 2. Domains keep to their rooms (issue 32, docs/architecture.md "The nevers"): a money domain's
//    code imports only its own folder, the shared floor, and the doors other domains open; the
//    shared floor imports no domain at all. The roles, the platform, the CLI, the worker's tasks
//    and the audit compose domains and are not rooms (they may import any domain's modules).
// 3. The clients keep to the wire: the browser loads web/ only, so web/ takes nothing from server/
//    but the wire's types (`import type`, erased when the module is served); the example agent
//    takes the wire's modules and nothing else of the server.
import tseslint from 'typescript-eslint';

const FUNCTION_LIMIT = ['error', { max: 70, skipBlankLines: true, skipComments: true, IIFEs: true }];

/**
 * The money domains (server/<room>/) and their doors: the modules a domain writes for the others to
 * call (pure rules and types, or calls into its own SQL), open to every other room and to the floor.
 * Anything else in the folder is internal.
 */
const ROOMS = {
  cage: [],
  bank: [],
  betting: [],
  // the table settings' rules (the bank contract's table creation and the live room both read them)
  game: ['tables/rules.ts'],
  // the game process runs a Sit-and-Go's tables: it reads the lifecycle's pure rules and settings,
  // opens the lifecycle span and makes the registration's reserve (game.tournament_reserve)
  tournaments: ['lifecycle.ts', 'lifecycle-span.ts', 'math.ts', 'registration.ts', 'rules.generated.ts', 'settings.ts'],
  // the board is the domain's face: the game reports conditions met through it
  claims: ['board.ts'],
};

/**
 * The shared floor every domain may stand on: HTTP plumbing and errors, the database pools and
 * migrations, keys and signatures, configuration, telemetry, the EVM adapter (clients, contract
 * ABIs, evidence read back from the chain: no money rules) and the bank contract both banks
 * implement.
 */
const SHARED = ['http', 'db', 'crypto', 'config', 'telemetry', 'chain', 'bank-contract'];

/**
 * TEMPORARY crossings, each in a file another part of issue 32 owns and is removing now. The
 * coordinator deletes an entry when the branch that removes the crossing lands (test/platform/
 * domain-rooms.test.ts fails on an entry whose import is gone); the list is meant to end empty.
 * `to` is the module imported (relative to server/), `owner` the part fixing it.
 */
export const TEMPORARY_CROSSINGS = [
];

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A pattern matching an import of anything under `folder` but the modules `except` (relative to it). */
const under = (folder, except, message) => ({
  regex: `(^|/)${escape(folder)}/${except.length ? `(?!(${except.map(escape).join('|')})$)` : ''}`,
  message,
});

/** The import patterns that keep a file of `room` (null: the shared floor) out of the others' internals. */
function roomPatterns(room, allowed = []) {
  return Object.entries(ROOMS).filter(([other]) => other !== room).map(([other, doors]) => under(other,
    [...doors, ...allowed.filter((a) => a.startsWith(`${other}/`)).map((a) => a.slice(other.length + 1))],
    room === null
      ? `the shared floor imports no money domain's internals (server/${other}/ is one): move what both need onto the floor.`
      : `server/${room}/ may not import server/${other}/'s internals${doors.length ? ` (its doors: ${doors.join(', ')})` : ''}: go through server/bank-contract/ or the shared floor (docs/architecture.md, "The nevers").`));
}

/** The wire (docs/protocol.md): the client's messages and the server's, as zod schemas and their types. */
const WIRE = ['game/live/messages.ts', 'game/live/server-messages.ts'];

const restrict = (room, allowed) => ['error', { patterns: roomPatterns(room, allowed) }];

const roomBlocks = [
  ...Object.keys(ROOMS).map((room) => ({ files: [`server/${room}/**/*.ts`], rules: { 'no-restricted-imports': restrict(room) } })),
  { files: SHARED.map((s) => `server/${s}/**/*.ts`), rules: { 'no-restricted-imports': restrict(null) } },
];

// one block per file with a temporary crossing (a later block's options replace the earlier's)
const roomOf = (file) => {
  const top = file.split('/')[1];
  return top in ROOMS ? top : null;
};
const crossingBlocks = [...new Set(TEMPORARY_CROSSINGS.map((c) => c.file))].map((file) => ({
  files: [file],
  rules: { 'no-restricted-imports': restrict(roomOf(file), TEMPORARY_CROSSINGS.filter((c) => c.file === file).map((c) => c.to)) },
}));

export default tseslint.config(
  {
    files: ['server/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', 'tasks/**/*.ts', 'web/**/*.ts', 'examples/**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    rules: { 'max-lines-per-function': FUNCTION_LIMIT },
  },
  ...roomBlocks,
  ...crossingBlocks,
  {
    files: ['web/**/*.ts'],
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      // `import { type X } from` keeps an empty import when served (the browser would fetch the module)
      '@typescript-eslint/no-import-type-side-effects': 'error',
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [under('server', WIRE,
          'the browser loads web/ only: take nothing from server/ but the wire\'s types (server/game/live/server-messages.ts, messages.ts).'), {
          group: ['**/server/game/live/server-messages.ts', '**/server/game/live/messages.ts'],
          allowTypeImports: true,
          message: 'the wire\'s modules are not served to the browser: `import type` only (erased when served).',
        }, {
          group: ['**/examples/**', '**/test/**', '**/tasks/**', '**/scripts/**', '**/bench/**'],
          message: 'the browser loads web/ only.',
        }],
      }],
    },
  },
  {
    files: ['examples/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [under('server', WIRE,
          'the example agent is what an agent author copies: it takes the wire (server/game/live/server-messages.ts, messages.ts) and nothing else of the server.'), {
          group: ['**/test/**', '**/tasks/**', '**/scripts/**', '**/bench/**', '**/web/**'],
          message: 'the example agent stands alone: it talks to the platform over its wire only.',
        }],
      }],
    },
  },
);
