// Sign in: the identity provider's ID token goes to the auth role's bridge (with an invite code on
// a first sign-in); the bridge answers with the access JWT every other call carries. In production
// the provider's redirect brings the token in the URL fragment (`#id_token=…`, OIDC's fragment
// response), or it is pasted; under the test harness a subject stands in (`test-idp-token:<sub>`).
import { call, setToken, webConfig } from './api.ts';
import { errorLine, h, mount } from './ui.ts';

const MESSAGES: Record<string, string> = {
  invite_required: 'A first sign-in needs an invite code.',
  invite_invalid: 'That invite code is expired, used up or unknown.',
  idp_token_invalid: 'The identity provider did not vouch for this sign-in.',
  idp_token_missing: 'No identity token was given.',
  idp_not_configured: 'No identity provider is configured on this platform.',
};

export async function signInPage(view: HTMLElement) {
  const config = await webConfig();
  const params = new URLSearchParams(location.hash.replace(/^#\/?(signin\??)?/, ''));
  const next = params.get('next') ?? 'lobby';
  const status = h('div', { id: 'signin-status' });
  const invite = h('input', { id: 'invite', name: 'invite', placeholder: 'invite code (first sign-in only)', size: 36, autocomplete: 'off' });

  async function bridge(idToken: string) {
    mount(status, h('p', { class: 'muted' }, 'Signing in…'));
    const r = await call('auth', '/api/auth/bridge', { body: { idToken, ...(invite.value.trim() ? { inviteCode: invite.value.trim() } : {}) } });
    if (!r.ok) return void mount(status, errorLine(MESSAGES[r.body?.error] ?? `Sign-in refused: ${r.body?.error ?? r.status}`));
    setToken(r.body.token);
    location.hash = `#/${next}`;
  }

  const fromProvider = params.get('id_token');
  const pasted = h('input', { id: 'id-token', placeholder: 'ID token from your identity provider', size: 48, autocomplete: 'off' });
  const subject = h('input', { id: 'test-subject', placeholder: 'any subject, e.g. alice', size: 24, autocomplete: 'off' });
  mount(view,
    h('h1', {}, 'Sign in'),
    h('div', { class: 'card' },
      h('p', {}, 'Sign in with your identity provider. Your first sign-in needs an invite code.'),
      h('div', { class: 'row' }, h('label', { for: 'invite' }, 'Invite code'), invite),
      h('div', { class: 'row' }, h('label', { for: 'id-token' }, 'ID token'), pasted,
        h('button', { id: 'signin-idp', onclick: () => void bridge(pasted.value.trim()) }, 'Sign in'))),
    config.testAuth
      ? h('div', { class: 'card', id: 'test-signin' },
        h('p', {}, 'Test harness: sign in as any subject (the bridge accepts test-idp-token:<subject> on this platform only).'),
        h('div', { class: 'row' }, h('label', { for: 'test-subject' }, 'Subject'), subject,
          h('button', { id: 'signin-test', onclick: () => void bridge(`test-idp-token:${subject.value.trim()}`) }, 'Test sign-in')))
      : null,
    status);
  if (fromProvider) await bridge(fromProvider);
}
