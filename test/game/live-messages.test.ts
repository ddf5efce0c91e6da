// The websocket's client messages are parsed by one zod discriminated union (server/game/live/messages.ts):
// each type with its fields, and a message that does not parse earns exactly one code.
import { clientMessage, CLIENT_MESSAGE_TYPES, parseClientMessage } from '../../server/game/live/messages.ts';
import { SEED_PATTERN } from '../../server/game/live/server-messages.ts';
import { CLIENT_SEED } from '../../server/game/poker/fair-deal.ts';

test('the union covers the protocol\'s eleven message types', () => {
  expect([...CLIENT_MESSAGE_TYPES].sort()).toEqual(['action', 'auth', 'deal_seed', 'join', 'leave', 'ping', 'register_for_tournament', 'sit', 'sit_in', 'sit_out', 'stand_up']);
});

test.each([
  [{ type: 'ping', ref: 1 }, { ok: true }],
  [{ type: 'join', tableId: 't1' }, { ok: true }],
  [{ type: 'sit', tableId: 't1', seatIndex: 'x', amount: [] }, { ok: true }], // the bank judges these
  [{ type: 'action', tableId: 't1', seq: 3, action: 'fold' }, { ok: true }],
  [{}, { ok: false, code: 'unknown_message_type' }],
  [{ type: 'shout' }, { ok: false, code: 'unknown_message_type' }],
  [{ type: 7 }, { ok: false, code: 'unknown_message_type' }],
  [{ type: 'join' }, { ok: false, code: 'bad_request', field: 'tableId' }],
  [{ type: 'leave', tableId: '' }, { ok: false, code: 'bad_request', field: 'tableId' }],
  [{ type: 'stand_up', tableId: 'x'.repeat(65) }, { ok: false, code: 'bad_request', field: 'tableId' }],
  [{ type: 'sit', tableId: 't1', seatIndex: 0, amount: 10, idempotencyKey: 5 }, { ok: false, code: 'bad_request', field: 'idempotencyKey' }],
  [{ type: 'action', tableId: 't1', action: 'fold' }, { ok: false, code: 'missing_seq' }],
  [{ type: 'action', tableId: 't1', seq: '3', action: 'fold' }, { ok: false, code: 'missing_seq' }],
] as [Record<string, unknown>, Record<string, unknown>][])('%j -> %j', (message, expected) => {
  expect(parseClientMessage(message)).toMatchObject(expected);
});

// An action (the message sent most) is taken without the union when the union would take it: what
// comes out must be exactly what the union gives, and anything the union refuses still earns its code.
test.each([
  { type: 'action', tableId: 't1', seq: 3, action: 'fold' },
  { type: 'action', tableId: 't1', seq: 0, handId: 'h:1', action: 'raise', amount: '40', ref: { a: [1] } },
  { type: 'action', tableId: 'x'.repeat(64), seq: -1.5, action: 7, amount: null, handId: null, ref: null, extra: 'dropped' },
  { type: 'action', tableId: 't1', seq: 1e300 },
  { type: 'action', tableId: '', seq: 1 },
  { type: 'action', tableId: 'x'.repeat(65), seq: 1 },
  { type: 'action', tableId: 5, seq: 1 },
  { type: 'action', seq: 1 },
  { type: 'action', tableId: 't1', seq: null },
  { type: 'action', tableId: 't1', seq: [1] },
] as Record<string, unknown>[])('action %j: as the union parses it', (message) => {
  const union = clientMessage.safeParse(message);
  const parsed = parseClientMessage(message);
  if (union.success) {
    expect(parsed).toEqual({ ok: true, message: union.data });
    expect(Object.keys(parsed.ok ? parsed.message : {}).sort()).toEqual(Object.keys(union.data).sort());
  } else {
    expect(parsed.ok).toBe(false);
  }
});

test('the wire\'s seed pattern is the dealer\'s (the wire states its own so that it imports zod only)', () => {
  expect(SEED_PATTERN.source).toBe(CLIENT_SEED.source);
  expect(SEED_PATTERN.flags).toBe(CLIENT_SEED.flags);
});
