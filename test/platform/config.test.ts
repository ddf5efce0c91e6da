// Configuration: defaults, one clear message per bad variable, and the test-harness rule.
import { ConfigError, loadConfig, loginCredentials, parseRoles, requireLoginPasswords, webIdentityProvider } from '../../server/config/index.ts';

function problems(env: Record<string, string>) {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected the configuration to be refused');
}

test('defaults', () => {
  const config = loadConfig({});
  expect(config).toMatchObject({
    NODE_ENV: 'development', HOST: '127.0.0.1', PORT: 3673, GAME_PORT: 3674, CAGE_PORT: 3675, CHAIN_BANK_PORT: 3676,
    ADMIN_PORT: 3677, PG_DATA_DIR: '.data/postgres', PG_PORT: 54329, ENABLE_TEST_AUTH: false, testAuthPermitted: false,
    HTTP_BODY_LIMIT: 65536,
  });
  expect(config.DATABASE_URL).toBeUndefined();
  expect(config.SERVICE_KEY).toBeUndefined();
});

test.each(['production', 'staging', 'Test', 'DEVELOPMENT', 'prod', ''])('ENABLE_TEST_AUTH=true with NODE_ENV=%p refuses to boot', (nodeEnv) => {
  const found = problems({ ENABLE_TEST_AUTH: 'true', NODE_ENV: nodeEnv });
  expect(found).toContainEqual(expect.stringMatching(/^ENABLE_TEST_AUTH: true is only allowed when NODE_ENV is development or test/));
});

test('ENABLE_TEST_AUTH=true with NODE_ENV unset refuses to boot (unset is not development)', () => {
  expect(problems({ ENABLE_TEST_AUTH: 'true' })).toEqual([
    'ENABLE_TEST_AUTH: true is only allowed when NODE_ENV is development or test (NODE_ENV is unset)',
  ]);
});

test.each(['development', 'test'])('ENABLE_TEST_AUTH=true is permitted with NODE_ENV=%s', (nodeEnv) => {
  expect(loadConfig({ ENABLE_TEST_AUTH: 'true', NODE_ENV: nodeEnv }).testAuthPermitted).toBe(true);
});

test.each(['', 'false', '1', 'TRUE', 'True', 'yes', 'on', ' true', 'true '])(
  'the test harness is off unless ENABLE_TEST_AUTH is exactly true: %p is off, and boots',
  (value) => {
    expect(loadConfig({ NODE_ENV: 'test', ENABLE_TEST_AUTH: value }).testAuthPermitted).toBe(false);
    // off is off everywhere: only `true` refuses a production boot
    expect(loadConfig({ NODE_ENV: 'production', ENABLE_TEST_AUTH: value, SERVICE_KEY: 'k'.repeat(16), AUTH_SECRET: 's'.repeat(32), DB_ROLE_SECRET: 'd'.repeat(16) }).testAuthPermitted).toBe(false);
  },
);

test('the test harness is off when ENABLE_TEST_AUTH is unset', () => {
  expect(loadConfig({ NODE_ENV: 'test' }).testAuthPermitted).toBe(false);
});

test('every bad variable gets its own message', () => {
  const found = problems({
    CAGE_PORT: 'abc', ADMIN_PORT: '70000', DATABASE_URL: 'mysql://x', SERVICE_KEY: 'short', CAGE_RECEIPT_KEY: 'zz', LOG_LEVEL: 'loud',
  });
  expect(found.map((p) => p.split(':')[0]).sort()).toEqual(
    ['ADMIN_PORT', 'CAGE_PORT', 'CAGE_RECEIPT_KEY', 'DATABASE_URL', 'LOG_LEVEL', 'SERVICE_KEY'].sort(),
  );
  expect(found.find((p) => p.startsWith('SERVICE_KEY'))).toMatch(/at least 16/);
});

test('an empty variable counts as unset', () => {
  const config = loadConfig({ DATABASE_URL: '', SERVICE_KEY: '' });
  expect(config.DATABASE_URL).toBeUndefined();
  expect(config.SERVICE_KEY).toBeUndefined();
});

test('roles: all built roles by default; --role repeatable and comma-separated; unknown refused', () => {
  expect(parseRoles([])).toEqual(['auth', 'game', 'cage', 'chain-bank', 'admin', 'worker', 'betting', 'web']);
  expect(parseRoles(['--role', 'cage'])).toEqual(['cage']);
  expect(parseRoles(['--role', 'cage', '--role=worker', '--role', 'cage,admin'])).toEqual(['cage', 'worker', 'admin']);
  expect(() => parseRoles(['--role', 'nope'])).toThrow(/unknown role 'nope'/);
  expect(parseRoles(['--role', 'chain-bank'])).toEqual(['chain-bank']);
  expect(() => parseRoles(['--verbose'])).toThrow(/unknown argument/);
});

test('DB_ROLE_SECRET: required in production, at least 16 characters; elsewhere optional', () => {
  expect(problems({ NODE_ENV: 'production' })).toContain("DB_ROLE_SECRET: required in production (the service logins' passwords are derived from it)");
  expect(problems({ DB_ROLE_SECRET: 'short' })).toEqual(['DB_ROLE_SECRET: must be at least 16 characters']);
  expect(loadConfig({ NODE_ENV: 'test' }).DB_ROLE_SECRET).toBeUndefined();
  expect(loadConfig({ NODE_ENV: 'production', DB_ROLE_SECRET: 'd'.repeat(16) }).DB_ROLE_SECRET).toBe('d'.repeat(16));
});

test('DB_LOGIN_ONLY: no secret, no owner credentials in the URL, each started role\'s login password required', () => {
  const url = 'postgres://db.internal:5432/poker';
  const config = loadConfig({ NODE_ENV: 'production', DB_LOGIN_ONLY: 'true', DATABASE_URL: url, DB_PASSWORD_POKER_CAGE: 'cage-password' });
  expect(config.DB_LOGIN_ONLY).toBe(true);
  expect(config.dbPasswords).toEqual({ poker_cage: 'cage-password' });
  expect(loginCredentials(config, 'poker_cage')).toEqual({ secret: undefined, password: 'cage-password' });
  expect(() => requireLoginPasswords(config, ['cage', 'web'])).not.toThrow();
  expect(() => requireLoginPasswords(config, ['cage', 'game', 'admin'])).toThrow(ConfigError);
  try {
    requireLoginPasswords(config, ['cage', 'game', 'admin']);
  } catch (err) {
    expect((err as ConfigError).problems).toEqual([
      'DB_PASSWORD_POKER_GAME: required with DB_LOGIN_ONLY=true (the game role connects as poker_game)',
      'DB_PASSWORD_POKER_GRAPHQL: required with DB_LOGIN_ONLY=true (the admin role connects as poker_graphql)',
    ]);
  }
  expect(problems({ DB_LOGIN_ONLY: 'true', DATABASE_URL: 'postgres://owner:pw@db.internal:5432/poker' })).toEqual([
    "DATABASE_URL: must carry no user nor password with DB_LOGIN_ONLY=true (only host, port and database: the owner's credentials stay with the migrator)",
  ]);
  expect(problems({ DB_LOGIN_ONLY: 'true', DATABASE_URL: url, DB_ROLE_SECRET: 'd'.repeat(16) })[0]).toMatch(/^DB_ROLE_SECRET: must be unset with DB_LOGIN_ONLY=true/);
  expect(problems({ DB_LOGIN_ONLY: 'true' })[0]).toMatch(/^DATABASE_URL: required with DB_LOGIN_ONLY=true/);
  // without the mode nothing changes: no password is required, a given one is used
  const plain = loadConfig({ DB_PASSWORD_POKER_GAME: 'given' });
  expect(() => requireLoginPasswords(plain, ['game', 'cage'])).not.toThrow();
  expect(loginCredentials(plain, 'poker_game').password).toBe('given');
  expect(loginCredentials(plain, 'poker_cage').password).toBeUndefined();
});

test('WEB_IDP_*: both or neither, the client id is IDP_AUDIENCE, https in production, the button\'s name', () => {
  const authorize = 'https://accounts.example.com/o/oauth2/v2/auth';
  expect(webIdentityProvider(loadConfig({}))).toBeNull();
  expect(webIdentityProvider(loadConfig({ WEB_IDP_AUTHORIZE_URL: authorize, WEB_IDP_CLIENT_ID: 'client-1', IDP_AUDIENCE: 'client-1' })))
    .toEqual({ name: 'Google', authorizeUrl: authorize, clientId: 'client-1' });
  expect(webIdentityProvider(loadConfig({ WEB_IDP_AUTHORIZE_URL: authorize, WEB_IDP_CLIENT_ID: 'client-1', IDP_AUTH_METHOD: 'apple' }))?.name).toBe('Apple');
  expect(webIdentityProvider(loadConfig({ WEB_IDP_AUTHORIZE_URL: authorize, WEB_IDP_CLIENT_ID: 'c', WEB_IDP_NAME: 'Acme ID' }))?.name).toBe('Acme ID');
  expect(problems({ WEB_IDP_AUTHORIZE_URL: authorize })).toEqual([expect.stringMatching(/^WEB_IDP_CLIENT_ID: required with WEB_IDP_AUTHORIZE_URL/)]);
  expect(problems({ WEB_IDP_CLIENT_ID: 'client-1' })).toEqual([expect.stringMatching(/^WEB_IDP_AUTHORIZE_URL: required with WEB_IDP_CLIENT_ID/)]);
  expect(problems({ WEB_IDP_AUTHORIZE_URL: authorize, WEB_IDP_CLIENT_ID: 'client-1', IDP_AUDIENCE: 'client-2' }))
    .toEqual(['WEB_IDP_CLIENT_ID: must equal IDP_AUDIENCE (the bridge refuses an ID token whose aud is not IDP_AUDIENCE)']);
  expect(problems({ WEB_IDP_AUTHORIZE_URL: 'http://idp.example.com/auth', WEB_IDP_CLIENT_ID: 'c', NODE_ENV: 'production', DB_ROLE_SECRET: 'd'.repeat(16) }))
    .toEqual(['WEB_IDP_AUTHORIZE_URL: must be https in production']);
  const found = problems({ WEB_IDP_AUTHORIZE_URL: 'javascript:alert(1)', WEB_IDP_CLIENT_ID: 'has space', WEB_IDP_NAME: 'a\u0000b' });
  expect(found.map((p) => p.split(':')[0]).sort()).toEqual(['WEB_IDP_AUTHORIZE_URL', 'WEB_IDP_CLIENT_ID', 'WEB_IDP_NAME']);
  expect(problems({ WEB_IDP_AUTHORIZE_URL: `${authorize}#frag`, WEB_IDP_CLIENT_ID: 'c' })).toEqual(['WEB_IDP_AUTHORIZE_URL: must not carry a fragment']);
});
