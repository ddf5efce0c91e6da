// The web client's shell: a hash router over the pages, the navigation, who is signed in.
import { session, signOut } from './api.ts';
import { h, mount } from './ui.ts';
import { providerResponse, signInPage } from './signin.ts';
import { lobbyPage } from './lobby.ts';
import { tablePage } from './table.ts';
import { tournamentPage } from './tournament.ts';
import { claimsPage } from './claims.ts';
import { walletsPage } from './wallets.ts';
import { handsPage } from './hands.ts';

/** A page: renders into `view`; returns what to do when the user leaves it (close a socket, a timer). */
export type Page = (view: HTMLElement, ...params: string[]) => Promise<(() => void) | void>;

const ROUTES: [RegExp, Page, boolean][] = [
  [/^signin$/, signInPage, false],
  [/^lobby$/, lobbyPage, false],
  [/^table\/([^/]+)$/, tablePage, false],
  [/^tournament\/([^/]+)$/, tournamentPage, false],
  [/^claims$/, claimsPage, true],
  [/^wallets$/, walletsPage, true],
  [/^hands$/, handsPage, true],
];

const NAV: [string, string][] = [['lobby', 'Lobby'], ['claims', 'Claim board'], ['wallets', 'Wallets'], ['hands', 'Hand histories']];

let leave: (() => void) | void;
/** The navigation now shown; a page still loading from an earlier one is dropped when it resolves. */
let navigation = 0;

function renderHeader(current: string) {
  const s = session();
  mount(document.getElementById('nav')!, NAV.map(([route, label]) =>
    h('a', { href: `#/${route}`, class: current.startsWith(route) ? 'active' : undefined }, label)));
  mount(document.getElementById('who')!, s
    ? [h('span', { 'data-testid': 'user-id' }, `signed in: ${s.userId}`), ' ', h('button', { class: 'secondary', onclick: () => { signOut(); location.hash = '#/signin'; } }, 'Sign out')]
    : [h('a', { href: '#/signin' }, 'Sign in')]);
}

async function route() {
  const mine = ++navigation;
  let path: string;
  try {
    path = decodeURIComponent(location.hash.replace(/^#\/?/, ''));
  } catch {
    path = location.hash.replace(/^#\/?/, ''); // a stray % (a provider's error_description, a typed URL)
  }
  path ||= session() ? 'lobby' : 'signin';
  leave?.();
  leave = undefined;
  renderHeader(path);
  // each navigation renders into its own element: a page of an earlier navigation that finishes
  // loading late renders into a detached one, never over the page now shown
  const view = h('div', {});
  mount(document.getElementById('view')!, view);
  const settle = (done: (() => void) | void) => {
    if (mine === navigation) leave = done;
    else done?.();
  };
  // the identity provider's answer (#id_token=…&state=… or #error=…) is the sign-in page's to judge
  const provider = providerResponse(location.hash) !== null;
  for (const [pattern, page, needsSession] of provider ? [] : ROUTES) {
    const m = pattern.exec(path);
    if (!m) continue;
    if (needsSession && !session()) {
      location.hash = `#/signin?next=${encodeURIComponent(path)}`;
      return;
    }
    mount(view, h('p', { class: 'muted' }, 'Loading…'));
    try {
      settle(await page(view, ...m.slice(1)));
    } catch (err) {
      mount(view, h('p', { class: 'error', role: 'alert' }, `Could not load this page: ${(err as Error).message}`));
    }
    return;
  }
  if (provider || path.startsWith('signin')) {
    try {
      settle(await signInPage(view));
    } catch (err) {
      mount(view, h('p', { class: 'error', role: 'alert' }, `Could not load this page: ${(err as Error).message}`));
    }
    return;
  }
  mount(view, h('p', { class: 'error' }, 'No such page.'), h('a', { href: '#/lobby' }, 'Lobby'));
}

window.addEventListener('hashchange', () => void route());
void route();
