// Sign in: the identity provider's ID token goes to the auth role's bridge (with an invite code on
// a first sign-in); the bridge answers with the access JWT every other call carries.
//
// The provider's flow (configured: `GET /api/web/config` answers `idp`): "Sign in with <provider>"
// sends the tab to the provider's authorization endpoint as an OpenID Connect implicit ID-token
// request (response_type=id_token, scope=openid email, redirect_uri = this page's origin, a fresh
// random `state` and `nonce` kept in sessionStorage with the invite code and where to go next). The
// provider sends the tab back with `#id_token=…&state=…` (or `#error=…&state=…`); the page takes the
// pending request out of sessionStorage (once: a replay finds nothing), drops the token from the
// URL, refuses a `state` it did not start (a sign-in link from elsewhere: login CSRF) and an ID token
// whose `nonce` is not the one it sent (a token replayed into this tab), then exchanges the token at
// the bridge, which verifies it (issuer, keys, audience, expiry). A token can also be pasted; under
// the test harness a subject stands in (`test-idp-token:<sub>`).
import { call, setToken, webConfig, type IdentityProvider } from './api.ts';
import { errorLine, h, mount } from './ui.ts';

const MESSAGES: Record<string, string> = {
  invite_required: 'A first sign-in needs an invite code.',
  invite_invalid: 'That invite code is expired, used up or unknown.',
  idp_token_invalid: 'The identity provider did not vouch for this sign-in.',
  idp_token_missing: 'No identity token was given.',
  idp_not_configured: 'No identity provider is configured on this platform.',
};

/** The provider request this tab started and has not seen answered (sessionStorage). */
const PENDING_KEY = 'poker.oidc';
interface Pending {
  state: string;
  nonce: string;
  next: string;
  invite: string;
}

/** 32 random bytes, base64url: a `state` or a `nonce`. */
function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Where the provider sends the tab back: this page, at its origin (register exactly this URL with the provider). */
export const redirectUri = () => `${location.origin}/`;

/** The provider's answer in the URL fragment (`id_token`, `error` or `state`), else null. */
export function providerResponse(hash: string): URLSearchParams | null {
  const params = new URLSearchParams(hash.replace(/^#\/?/, ''));
  return params.has('id_token') || params.has('error') || params.has('state') ? params : null;
}

/** A page to go to after signing in: a route of this client, never the sign-in page or anything odd. */
function safeNext(next: string | null | undefined): string {
  return next && /^[a-z][a-z0-9/_-]{0,200}$/i.test(next) && !next.startsWith('signin') ? next : 'lobby';
}

/** The pending request, taken out of sessionStorage: it answers one return only. */
function takePending(): Pending | null {
  const raw = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  if (!raw) return null;
  try {
    const p = JSON.parse(raw) as Partial<Pending>;
    if (typeof p.state !== 'string' || typeof p.nonce !== 'string' || !p.state || !p.nonce) return null;
    return { state: p.state, nonce: p.nonce, next: safeNext(p.next), invite: typeof p.invite === 'string' ? p.invite : '' };
  } catch {
    return null;
  }
}

/** The claims of a JWT, decoded but NOT verified (the bridge verifies); null when it is not one. */
function unverifiedClaims(jwt: string): Record<string, unknown> | null {
  try {
    const part = jwt.split('.')[1] ?? '';
    const json = new TextDecoder().decode(Uint8Array.from(atob(part.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0)));
    const claims = JSON.parse(json) as unknown;
    return claims && typeof claims === 'object' ? claims as Record<string, unknown> : null;
  } catch {
    return null;
  }
}

/** Sends the tab to the provider's authorization endpoint (an OIDC implicit ID-token request). */
function startProvider(idp: IdentityProvider, next: string, invite: string): string | undefined {
  const url = new URL(idp.authorizeUrl);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'The identity provider\'s address is not a web address.';
  const pending: Pending = { state: randomToken(), nonce: randomToken(), next, invite };
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  url.searchParams.set('response_type', 'id_token');
  url.searchParams.set('response_mode', 'fragment');
  url.searchParams.set('client_id', idp.clientId);
  url.searchParams.set('redirect_uri', redirectUri());
  url.searchParams.set('scope', 'openid email');
  url.searchParams.set('state', pending.state);
  url.searchParams.set('nonce', pending.nonce);
  location.assign(url.href);
  return undefined;
}

export async function signInPage(view: HTMLElement) {
  const config = await webConfig();
  const response = providerResponse(location.hash);
  // the ID token leaves the address bar and the history at once (the back button cannot replay it)
  if (response) history.replaceState(null, '', `${location.pathname}${location.search}#/signin`);
  const params = response ? new URLSearchParams() : new URLSearchParams(location.hash.replace(/^#\/?(signin\??)?/, ''));
  let next = safeNext(params.get('next'));
  const status = h('div', { id: 'signin-status' });
  const invite = h('input', { id: 'invite', name: 'invite', placeholder: 'invite code (first sign-in only)', size: 36, autocomplete: 'off' });

  async function bridge(idToken: string) {
    mount(status, h('p', { class: 'muted' }, 'Signing in…'));
    const code = invite.value.trim();
    const r = await call('auth', '/api/auth/bridge', { body: { idToken, ...(code ? { inviteCode: code } : {}) } });
    if (!r.ok) {
      const error: string = typeof r.body?.error === 'string' ? r.body.error : `http_${r.status}`;
      const line = errorLine(MESSAGES[error] ?? `Sign-in refused: ${error}`);
      // the provider's token is still good for a few minutes: the same sign-in goes on with a code
      if (error === 'invite_required' || error === 'invite_invalid') {
        return void mount(status, line, h('div', { class: 'row' },
          h('button', { id: 'signin-continue', onclick: () => void bridge(idToken) }, 'Continue with this invite code')));
      }
      return void mount(status, line);
    }
    setToken(r.body.token);
    location.hash = `#/${next}`;
  }

  const pasted = h('input', { id: 'id-token', placeholder: 'ID token from your identity provider', size: 48, autocomplete: 'off' });
  const subject = h('input', { id: 'test-subject', placeholder: 'any subject, e.g. alice', size: 24, autocomplete: 'off' });
  const idp = config.idp;
  mount(view,
    h('h1', {}, 'Sign in'),
    h('div', { class: 'card' },
      h('p', {}, 'Sign in with your identity provider. Your first sign-in needs an invite code.'),
      h('div', { class: 'row' }, h('label', { for: 'invite' }, 'Invite code'), invite),
      idp
        ? h('div', { class: 'row' }, h('button', { id: 'signin-provider', onclick: () => {
          const refused = startProvider(idp, next, invite.value.trim());
          if (refused) mount(status, errorLine(refused));
        } }, `Sign in with ${idp.name}`))
        : null,
      h('div', { class: 'row' }, h('label', { for: 'id-token' }, idp ? 'or an ID token' : 'ID token'), pasted,
        h('button', { id: 'signin-idp', class: idp ? 'secondary' : undefined, onclick: () => void bridge(pasted.value.trim()) }, 'Sign in'))),
    config.testAuth
      ? h('div', { class: 'card', id: 'test-signin' },
        h('p', {}, 'Test harness: sign in as any subject (the bridge accepts test-idp-token:<subject> on this platform only).'),
        h('div', { class: 'row' }, h('label', { for: 'test-subject' }, 'Subject'), subject,
          h('button', { id: 'signin-test', onclick: () => void bridge(`test-idp-token:${subject.value.trim()}`) }, 'Test sign-in')))
      : null,
    status);

  if (!response) return;
  // the provider's answer: only to a request this tab started, and only once
  const pending = takePending();
  const state = response.get('state');
  if (!pending || !state || state !== pending.state) {
    return void mount(status, errorLine('Sign-in refused: this answer does not match a sign-in started in this tab (its state differs). Start again with the button above.'));
  }
  next = pending.next;
  invite.value = pending.invite;
  const error = response.get('error');
  if (error) {
    const description = response.get('error_description');
    return void mount(status, errorLine(`${idp?.name ?? 'The identity provider'} did not sign you in: ${error}${description ? ` (${description})` : ''}.`));
  }
  const idToken = response.get('id_token');
  if (!idToken) return void mount(status, errorLine('Sign-in refused: the identity provider answered without an ID token.'));
  if (unverifiedClaims(idToken)?.nonce !== pending.nonce) {
    return void mount(status, errorLine('Sign-in refused: the ID token was not issued for this sign-in (its nonce differs). Start again with the button above.'));
  }
  await bridge(idToken);
}
