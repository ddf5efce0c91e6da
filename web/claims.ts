// The claim board: the caller's sections (baseline first, then the unlocks by order), each with its
// state and claimable flag; a claim goes through the web role (span `ui.claim.submit`).
import { call, must } from './api.ts';
import { errorLine, grid, h, mount } from './ui.ts';

const OUTCOMES: Record<string, string> = {
  credited: 'Credited to your cage balance.',
  locked: 'This section is still locked.',
  already_claimed: 'Already claimed.',
  forged: 'Refused.',
  wallet_not_linked: 'Link a Solana wallet first: the grant is minted to it.',
  claim_board_disabled: 'The claim board is switched off.',
};

export async function claimsPage(view: HTMLElement) {
  const status = h('div', { id: 'claim-status' });
  const render = async () => {
    const board = await must('game', '/claim-board/state');
    const sections = (board.sections ?? []) as any[];
    mount(view, h('h1', {}, 'Claim board'),
      h('p', { class: 'muted' }, 'Play chips with no cash value: the weekly baseline, and unlocks lit by what you do on the platform.'),
      sections.length === 0 ? h('p', { class: 'muted' }, 'The claim board is empty.') : grid(['Section', 'Kind', 'Amount', 'State', ''], sections.map((s) => [
        s.key, `${s.kind}${s.cadence ? ` (${s.cadence})` : ''}`, String(s.amount), h('span', { 'data-state': s.key }, s.state ?? (s.claimable ? 'claimable' : '—')),
        h('button', { 'data-claim': s.key, disabled: !s.claimable, onclick: () => void claim(s.key) }, s.claimable ? 'Claim' : 'Not claimable'),
      ]), { id: 'claim-board' }),
      status);
  };
  async function claim(sectionKey: string) {
    const r = await call('game', '/claim-board/claim', { body: { sectionKey } });
    const code = r.body?.outcome ?? r.body?.error ?? `http_${r.status}`;
    await render();
    mount(status, r.ok ? h('p', { class: 'ok', id: 'claim-outcome', 'data-outcome': code }, `${sectionKey}: ${OUTCOMES[code] ?? code}`)
      : errorLine(`${sectionKey}: ${OUTCOMES[code] ?? code}`));
    status.firstElementChild?.setAttribute('data-outcome', code);
  }
  await render();
}
