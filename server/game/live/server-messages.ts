// What the server sends on the live tables' websocket (docs/protocol.md), as zod schemas: the one
// description of the server's messages. The TypeScript types the server builds them with (through
// `satisfies`), the example agent's types and the AsyncAPI document's payloads (asyncapi.ts) are all
// derived from these; test/game/ws-server-messages.test.ts checks every message real play sends against
// them. The objects are strict (a field the server sends that is not here fails the test): a new
// field is added here first. Chips are decimal strings (bigint end to end), cards two characters.
// The file imports zod only, so a client can copy it (wire.ts checks its lists against the server's).
import { z } from 'zod';

/** Chips: a decimal string (a bigint on the server). */
export const chips = z.string().regex(/^(0|[1-9][0-9]*)$/).describe('chips: a non-negative decimal string (bigint)');
/** A signed chip amount (a stack's net over a hand). */
const signedChips = z.string().regex(/^(0|-?[1-9][0-9]*)$/).describe('chips: a signed decimal string (bigint)');
/** A card: rank then suit (`As`, `Td`, `2c`). */
export const card = z.string().regex(/^[2-9TJQKA][cdhs]$/).describe('a card: rank (2-9, T, J, Q, K, A) then suit (c, d, h, s)');
/** The answer's `ref`: the client message's own, any JSON value, present when the client sent one. */
const ref = z.unknown().optional().describe('the `ref` of the client message this answers (absent when it had none)');
const tableId = z.string().min(1).max(64);
const userId = z.uuid();
const agentId = z.uuid().nullable();
const index = z.int().min(0);
const count = z.int().min(0);
/** A time as epoch milliseconds (the tournament clock). */
const epochMs = z.int().describe('epoch milliseconds');
const handId = z.string().min(1);

const street = z.enum(['preflop', 'flop', 'turn', 'river']);
const actionType = z.enum(['fold', 'check', 'call', 'bet', 'raise']);
/** A tournament's lifecycle states (the server's LIFECYCLE_STATES, tournaments/lifecycle.ts). */
export const tournamentState = z.enum(['registering', 'starting', 'playing', 'ended', 'settling', 'closed']);
/** A hand's category, weakest first (the evaluator's CATEGORIES, poker/cards.ts). */
export const handCategory = z.enum([
  'high_card', 'pair', 'two_pair', 'three_of_a_kind', 'straight', 'flush', 'full_house', 'four_of_a_kind', 'straight_flush',
]);
const role = z.enum(['player', 'spectator']);

/** One seat of a `game_state` (cards only where the viewer may see them). */
export const wireSeat = z.strictObject({
  seatIndex: index,
  userId,
  agentId,
  stack: chips,
  bet: chips,
  inHand: z.boolean(),
  folded: z.boolean(),
  allIn: z.boolean(),
  sittingOut: z.boolean(),
  cards: z.array(card).nullable(),
});

/** The legal actions of the seat to act (sent to that seat only). */
export const wireLegal = z.strictObject({
  actions: z.array(actionType).min(1),
  toCall: chips,
  minRaiseTo: chips.nullable(),
  maxRaiseTo: chips.nullable(),
  seq: count,
  handId,
});

/** game_state's `tournament` (docs/tournaments.md): the level and the field, the same for every viewer. */
const tournamentField = z.strictObject({
  state: tournamentState,
  currentLevel: count,
  smallBlind: chips,
  bigBlind: chips,
  ante: chips.optional(),
  levelEndsAt: epochMs.nullable(),
  registeredCount: count,
});

/** game_state's `tournamentSchedule`: the blind levels (from `firstLevel` on a parametric table) and the prize shares. */
const tournamentSchedule = z.strictObject({
  levels: z.array(z.strictObject({ sb: chips, bb: chips, ante: chips.optional(), durationMs: z.int().min(0) })),
  firstLevel: count.optional(),
  prizeStructure: z.array(z.strictObject({ position: z.int().min(1), share: z.number().min(0).max(1) })),
  continues: z.literal(true),
  totalLevels: count.nullable(),
});

/** game_state's `tournamentMyView`: the viewer's own, while playing with chips (else null). */
const tournamentMyView = z.strictObject({
  rank: z.int().min(1),
  stackInBigBlinds: z.number(),
  mRatio: z.number(),
  payJumpToNext: chips,
}).nullable();

/**
 * A seed a seated player mixes into the next hand's deal (`deal_seed`; revealed in `hand_result`):
 * the dealer's CLIENT_SEED (poker/fair-deal.ts), stated here so that this file imports zod only
 * (test/game/live-messages.test.ts checks the two agree).
 */
export const SEED_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/).describe('a SHA-256 digest, lowercase hex');

/** What a hand's end reveals of its deal (docs/dealer.md, "A deal anyone can check"). */
export const dealReveal = z.strictObject({
  algorithm: z.enum(['sha256-fisher-yates-v2', 'sha256-fisher-yates-v1', 'seeded-v1']),
  commitment: sha256Hex,
  serverSeed: z.string().regex(/^([0-9a-f]{2})+$/).describe('the server seed, hex'),
  contributions: z.array(z.strictObject({ seat: index, seed: z.string().regex(SEED_PATTERN) })),
});

/** `game_state`, personalised per connection; the tournament fields only on `sng` tables. */
export const gameStateMessage = z.strictObject({
  type: z.literal('game_state'),
  tableId,
  blinds: z.strictObject({ small: chips, big: chips, ante: chips }),
  handId: handId.nullable(),
  seq: count.nullable(),
  street: street.nullable(),
  status: z.enum(['waiting', 'betting', 'complete']),
  board: z.array(card).max(5),
  button: index.nullable(),
  smallBlindSeat: index.nullable(),
  bigBlindSeat: index.nullable(),
  currentBet: chips,
  pots: z.array(z.strictObject({ amount: chips, eligible: z.array(index) })),
  toAct: index.nullable(),
  turnDeadline: z.iso.datetime().nullable(),
  dealCommitment: sha256Hex.nullable().describe('the hand in progress: SHA-256 of its server seed, announced before it was dealt'),
  nextDealCommitment: sha256Hex.nullable().describe('the next hand\'s: players may contribute a seed for it (deal_seed)'),
  tournament: tournamentField.optional(),
  tournamentSchedule: tournamentSchedule.optional(),
  yourSeat: index.nullable(),
  seats: z.array(wireSeat),
  legal: wireLegal.nullable(),
  tournamentMyView: tournamentMyView.optional(),
});

/** `hand_result`, once per hand to everyone at the table: pots and winners, what was shown. */
export const handResultMessage = z.strictObject({
  type: z.literal('hand_result'),
  tableId,
  handId,
  board: z.array(card).max(5),
  showdown: z.boolean(),
  rake: chips,
  pots: z.array(z.strictObject({
    amount: chips, rake: chips, eligible: z.array(index), winners: z.array(z.strictObject({ seat: index, amount: chips })),
  })),
  uncalled: z.array(z.strictObject({ seat: index, amount: chips })),
  shown: z.array(z.strictObject({
    seat: index, userId: userId.nullable(), cards: z.array(card), best: z.array(card).length(5), category: handCategory, description: z.string(),
  })),
  mucked: z.array(index),
  stacks: z.array(z.strictObject({ seat: index, userId: userId.nullable(), stack: chips, net: signedChips })),
  deal: dealReveal,
  record: z.strictObject({ hash: sha256Hex, signature: z.string().regex(/^[0-9a-f]{128}$/) }).describe('the hand\'s signed record: keep both to prove later what the platform said'),
});

/** A settlement's receipt as the cage signs it (relayed in `stood_up`). */
const receipt = z.strictObject({
  id: z.string(),
  ledgerRefId: z.string(),
  tableId,
  historyHash: z.string(),
  payload: z.base64(),
  signature: z.hex(),
  publicKey: z.hex(),
  createdAt: z.iso.datetime({ offset: true }),
});

/** `stood_up`: the seat's chips went back through the bank (or the player busted in the hand they waited for). */
export const stoodUpMessage = z.strictObject({
  type: z.literal('stood_up'),
  tableId,
  amount: chips.nullable(),
  txHash: z.string().nullable(),
  receipt: receipt.nullable(),
  busted: z.literal(true).optional(),
  ref,
});

/** `error`: a refused message (the connection stays usable); `code` in docs/protocol.md's table. */
export const errorMessage = z.strictObject({
  type: z.literal('error'),
  code: z.string().regex(/^[a-z][a-z0-9_]*$/),
  tableId: z.string().optional(),
  field: z.string().optional().describe('bad_request: the field'),
  url: z.string().nullable().optional().describe('table_elsewhere: the base URL of the game process that runs the table'),
  message: z.string().optional().describe('a human-readable note (arena_engine_unavailable)'),
  ref,
});

const tournamentStateChanged = z.discriminatedUnion('state', [
  z.strictObject({ type: z.literal('tournament_state_changed'), tableId, state: z.literal('starting'), startsAt: epochMs.nullable() }),
  z.strictObject({ type: z.literal('tournament_state_changed'), tableId, state: z.literal('playing'), currentLevel: count, levelStartedAt: epochMs.nullable() }),
  z.strictObject({ type: z.literal('tournament_state_changed'), tableId, state: z.literal('ended'), forced: z.boolean() }),
  z.strictObject({ type: z.literal('tournament_state_changed'), tableId, state: z.literal('settling') }),
  z.strictObject({ type: z.literal('tournament_state_changed'), tableId, state: z.literal('closed'), closedAt: epochMs.nullable() }),
]);

/** A message that names its table and answers a client message (`ref`), nothing more. */
const atTable = <T extends string>(type: T) => z.strictObject({ type: z.literal(type), tableId, ref });

/**
 * Every message the server sends, by type. The key is the message's `type` (the union below and
 * the AsyncAPI document's components read it from here).
 */
export const SERVER_MESSAGES = {
  hello: z.strictObject({ type: z.literal('hello'), userId: userId.nullable(), agentId, role }),
  authenticated: z.strictObject({ type: z.literal('authenticated'), userId: userId.nullable(), agentId, ref }),
  joined: z.strictObject({ type: z.literal('joined'), tableId, role, ref }),
  left: atTable('left'),
  game_state: gameStateMessage,
  hand_result: handResultMessage,
  sit_pending: atTable('sit_pending'),
  seated: z.strictObject({ type: z.literal('seated'), tableId, seatIndex: index, chipBalance: chips, ref }),
  action_ack: z.strictObject({ type: z.literal('action_ack'), tableId, duplicate: z.literal(true).optional(), ref }),
  sat_out: atTable('sat_out'),
  sat_in: atTable('sat_in'),
  deal_seed_accepted: z.strictObject({ type: z.literal('deal_seed_accepted'), tableId, commitment: sha256Hex, ref }),
  stand_up_pending: atTable('stand_up_pending'),
  stood_up: stoodUpMessage,
  error: errorMessage,
  pong: z.strictObject({ type: z.literal('pong'), ref }),
  table_closed: z.strictObject({
    type: z.literal('table_closed'), tableId,
    // idle: a room unloaded as idle while a join raced the check (a closed tournament's room): join again
    reason: z.enum(['lease_lost', 'server_stopping', 'idle']),
  }),
  // issue 32: the cage escaped the table (its seats closed into custody, the table frozen): to each
  // player it unseated, the custody entry that holds their chips (GET /api/custody shows it)
  table_escaped: z.strictObject({
    type: z.literal('table_escaped'), tableId,
    escapeId: z.string().regex(/^[1-9][0-9]*$/),
    outcome: z.enum(['clean', 'divergent']).describe('clean: each player\'s own FREE entry; divergent: the table\'s one hold, split later by an operator'),
    entry: z.strictObject({
      id: z.string().regex(/^[1-9][0-9]*$/).describe('the custody entry id (GET /api/custody, POST /api/custody/claim)'),
      amount: chips.describe('chips: the player\'s stack (clean), or the hold\'s whole pool (divergent)'),
      status: z.enum(['free', 'claimed', 'disputed', 'needs_reconciliation', 'reconciled']),
    }),
  }),
  tournament_registered: z.strictObject({
    type: z.literal('tournament_registered'), tableId, seatIndex: index, reservedUntil: epochMs, entryFee: chips, registeredCount: count, ref,
  }),
  tournament_unregistered: z.strictObject({
    type: z.literal('tournament_unregistered'), tableId, status: z.enum(['refunded', 'released']), amount: chips, txHash: z.string().nullable(),
    payment: z.string().optional().describe('a chain refund not confirmed yet: its payment state'), note: z.string().optional(), ref,
  }),
  tournament_state_changed: tournamentStateChanged,
  blind_level_changed: z.strictObject({
    type: z.literal('blind_level_changed'), tableId, currentLevel: z.int().min(1), levelStartedAt: epochMs.nullable(),
    smallBlind: chips, bigBlind: chips, ante: chips.optional(), levelEndsAt: epochMs.nullable(),
  }),
  player_eliminated: z.strictObject({
    type: z.literal('player_eliminated'), tableId, handId, userId, seatIndex: index, position: z.int().min(1), tiedFrom: z.int().min(1), remaining: count,
  }),
  tournament_ended: z.strictObject({
    type: z.literal('tournament_ended'), tableId,
    finalStandings: z.array(z.strictObject({ position: z.int().min(1), userId, agentId, tiedFrom: z.int().min(1) })),
    payouts: z.array(z.strictObject({ position: z.int().min(1), userId, amount: chips })),
  }),
  tournament_payout_settled: z.strictObject({
    type: z.literal('tournament_payout_settled'), tableId, position: z.int().min(1), userId, amount: chips, txHash: z.string(),
  }),
};

type Schemas = typeof SERVER_MESSAGES;
export type ServerMessageType = keyof Schemas;
/** Every message the server sends, as the client reads it (JSON.parse). */
export type ServerMessage = { [K in ServerMessageType]: z.infer<Schemas[K]> }[ServerMessageType];
/** One server message by type. */
export type ServerMessageOf<K extends ServerMessageType> = z.infer<Schemas[K]>;

export type GameStateMessage = z.infer<typeof gameStateMessage>;
export type WireSeat = z.infer<typeof wireSeat>;
export type WireLegal = z.infer<typeof wireLegal>;
export type HandResultMessage = z.infer<typeof handResultMessage>;
export type StoodUpMessage = z.infer<typeof stoodUpMessage>;
export type ErrorMessage = z.infer<typeof errorMessage>;

export const SERVER_MESSAGE_TYPES = Object.keys(SERVER_MESSAGES) as ServerMessageType[];

/** Every server message, one discriminated union on `type` (strict: an unknown field fails). */
export const serverMessage = z.discriminatedUnion('type', Object.values(SERVER_MESSAGES) as unknown as [Schemas[ServerMessageType], ...Schemas[ServerMessageType][]]);
