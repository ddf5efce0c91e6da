// Closed creation paths: every spelling a router might treat as the same path is blocked; the
// paths that stay open are not.
import { isClosedCreationPath, normalisePath } from '../../server/auth/blocked-paths.ts';

test.each([
  '/api/auth/sign-up/email',
  '/api/auth/sign-up',
  '/api/auth/sign-up-anything',
  '/api/auth/sign-up/email/',
  '/API/Auth/Sign-Up/Email',
  '/api/auth/sign%2Dup/email',
  '/api/auth/sign%252Dup/email',
  '/api%2Fauth%2Fsign-up%2Femail',
  '//api//auth///sign-up/email',
  '/api/./auth/sign-up/email',
  '/api/x/../auth/sign-up/email',
  '/api/auth/x/%2e%2e/sign-up/email',
  '/api/auth/sign-up;jsessionid=1/email',
  '/api/auth/sign-up/email?next=/',
  '/api/auth/sign-up/email#frag',
  '\\api\\auth\\sign-up\\email',
  'http://evil.example/api/auth/sign-up/email',
  '/api/auth/siwe/verify',
  '/api/auth/siwe/verify/',
  '/api/auth/SIWE/VERIFY;a=b',
  '/api/auth/sign-in/social',
  '/api/auth/sign-in/social/?provider=google',
  '/api/auth/callback',
  '/api/auth/callback/google',
  '/api/auth/callback%2Fgoogle',
  '/api/auth/sign-up/email%00',
  '/api/auth/sign-up/ email',
])('blocked: %s', (target) => {
  expect(isClosedCreationPath(target)).toBe(true);
});

test.each([
  '/api/auth/sign-in/email',
  '/api/auth/sign-out',
  '/api/auth/get-session',
  '/api/auth/token',
  '/api/auth/jwks',
  '/api/auth/siwe/nonce',
  '/api/link-wallet',
  '/api/auth/sign-upgrade/../sign-in/email',
  '/health',
])('open: %s', (target) => {
  expect(isClosedCreationPath(target)).toBe(false);
});

test('normalisation', () => {
  expect(normalisePath('//A/./b/../C;x=1/?q#f')).toBe('/a/c');
  expect(normalisePath('/%zz/%41')).toBe('/%zz/a');
  expect(normalisePath('/../../etc')).toBe('/etc');
});
