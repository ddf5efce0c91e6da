// TRUST_PROXY and the attempt limits: parsed at boot into Express's `trust proxy` setting, a bad
// value refused with its variable's name, never half-applied.
import express from 'express';
import { ConfigError, loadConfig } from '../../server/config/index.ts';

const base = { NODE_ENV: 'test' };

test.each([
  [undefined, false],
  ['', false],
  ['false', false],
  ['true', true],
  ['2', 2],
  ['loopback', ['loopback']],
  ['10.0.0.0/8, 192.168.1.7,fd00::/8 ,uniquelocal', ['10.0.0.0/8', '192.168.1.7', 'fd00::/8', 'uniquelocal']],
  ['::1/128,203.0.113.0/24', ['::1/128', '203.0.113.0/24']],
])('TRUST_PROXY=%j is %j', (value, expected) => {
  const setting = loadConfig({ ...base, TRUST_PROXY: value }).TRUST_PROXY;
  expect(setting).toEqual(expected);
  expect(() => express().set('trust proxy', setting)).not.toThrow();
});

// every value accepted here is one Express accepts (it compiles the setting when the role starts)
test.each(['yes', '10.0.0.0/33', 'fd00::/129', 'loopback/8', '10.0.0.1/8/8', 'example.com', '1.2.3.4,,', '0.0.0.0/0', '::/0'])('TRUST_PROXY=%j is refused', (value) => {
  expect(() => loadConfig({ ...base, TRUST_PROXY: value })).toThrow(ConfigError);
  try {
    loadConfig({ ...base, TRUST_PROXY: value });
  } catch (err) {
    expect((err as ConfigError).problems.join('\n')).toMatch(/^TRUST_PROXY: /m);
  }
});

test('the attempt limits have their documented defaults and refuse nonsense', () => {
  const config = loadConfig(base);
  expect([config.AUTH_LIMIT_WINDOW_SECONDS, config.AUTH_SIGN_IN_LIMIT_PER_ACCOUNT, config.AUTH_SIGN_IN_LIMIT_PER_PEER, config.AUTH_RECOVERY_LIMIT_PER_PEER])
    .toEqual([900, 10, 100, 20]);
  expect(() => loadConfig({ ...base, AUTH_SIGN_IN_LIMIT_PER_ACCOUNT: '0' })).toThrow(ConfigError);
  expect(() => loadConfig({ ...base, AUTH_LIMIT_WINDOW_SECONDS: 'soon' })).toThrow(ConfigError);
});
