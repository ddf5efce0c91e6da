// A real local OIDC issuer for tests: RS256 keys, a JWKS served over HTTP on an ephemeral port,
// and ID tokens signed like a provider's. `/authorize` stands in for the provider's login page in
// the implicit ID-token flow (response_type=id_token): for the user `signInAs` chose (the person who
// would type a password there) it redirects to `redirect_uri` with `#id_token=<signed, with the
// request's nonce>&state=<the request's state>`; `signInAs(null)` makes the person cancel
// (`#error=access_denied&state=…`). A client id other than the audience or a missing redirect_uri is a
// 400 page, never a redirect (OIDC: an unverified redirect_uri is not used).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';

export interface TestUser extends JWTPayload {
  sub: string;
  email?: string;
}

export interface LocalIssuer {
  issuer: string;
  jwksUrl: string;
  /** The provider's authorization endpoint (the implicit ID-token flow). */
  authorizeUrl: string;
  audience: string;
  idToken(claims: JWTPayload & { sub: string }, options?: { audience?: string; issuer?: string; expiresIn?: string; foreignKey?: boolean }): Promise<string>;
  /**
   * Who signs in at the next `/authorize` requests (null: the person cancels); `answer` overrides what
   * goes back (a tampered `state` or `nonce`, as an attacker's response would carry).
   */
  signInAs(user: TestUser | null, answer?: { state?: string; nonce?: string }): void;
  /** The query of every `/authorize` request, in order. */
  readonly authorizeRequests: URLSearchParams[];
  close(): Promise<void>;
}

export async function startLocalIssuer(audience = 'poker-web-client'): Promise<LocalIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const foreign = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'idp-key-1', alg: 'RS256', use: 'sig' };
  let base = '';
  const idToken: LocalIssuer['idToken'] = (claims, options = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'idp-key-1' })
      .setIssuer(options.issuer ?? base)
      .setAudience(options.audience ?? audience)
      .setIssuedAt()
      .setExpirationTime(options.expiresIn ?? '10m')
      .sign(options.foreignKey ? foreign.privateKey : privateKey);
  let user: TestUser | null | undefined;
  let override: { state?: string; nonce?: string } = {};
  const authorizeRequests: URLSearchParams[] = [];

  async function authorize(query: URLSearchParams): Promise<{ status: number; headers: Record<string, string>; body?: string }> {
    authorizeRequests.push(query);
    const bad = (why: string) => ({ status: 400, headers: { 'content-type': 'text/plain' }, body: why });
    if (query.get('client_id') !== audience) return bad('unknown client_id');
    const redirect = query.get('redirect_uri');
    if (!redirect || !/^https?:\/\//.test(redirect)) return bad('redirect_uri missing');
    const back = (params: Record<string, string>) => {
      const state = override.state ?? query.get('state');
      const fragment = new URLSearchParams({ ...params, ...(state !== null ? { state } : {}) });
      return { status: 302, headers: { location: `${redirect}#${fragment}` } };
    };
    if (query.get('response_type') !== 'id_token') return back({ error: 'unsupported_response_type' });
    if (!query.get('scope')?.split(' ').includes('openid')) return back({ error: 'invalid_scope' });
    const nonce = query.get('nonce');
    if (!nonce) return back({ error: 'invalid_request', error_description: 'nonce required' });
    if (user === undefined) return bad('no test user: call signInAs first');
    if (user === null) return back({ error: 'access_denied', error_description: 'the user cancelled' });
    return back({ id_token: await idToken({ ...user, nonce: override.nonce ?? nonce }), token_type: 'Bearer' });
  }

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/.well-known/jwks.json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    } else if (url.pathname === '/authorize' && req.method === 'GET') {
      authorize(url.searchParams).then(
        (a) => res.writeHead(a.status, a.headers).end(a.body),
        (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(err.message),
      );
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer: base,
    jwksUrl: `${base}/.well-known/jwks.json`,
    authorizeUrl: `${base}/authorize`,
    audience,
    idToken,
    signInAs(next, answer = {}) {
      user = next;
      override = answer;
    },
    authorizeRequests,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}
