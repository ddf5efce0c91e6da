// The client's websocket messages, parsed by one zod discriminated union on `type` (docs/protocol.md).
// Fields the server judges with their own codes stay open here and are judged where they are used:
// a sit's `seatIndex`, `amount` and (a chain table's) `permit` and `signerAddress` by the bank, an action's `handId`, `action` and `amount` by the
// room (illegal_amount, stale_sequence ...), a token by the verifier. A message that does not parse
// answers one code: `unknown_message_type` for a missing or unknown `type`, `missing_seq` for an
// action without a numeric `seq`, else `bad_request` naming the field. Like server-messages.ts, the
// file imports zod and the wire only: the web client and the example agent take its types.
import { z } from 'zod';
import { SEED_PATTERN } from './server-messages.ts';

const ref = z.unknown().optional();
const tableId = z.string().min(1).max(64);
const atTable = { ref, tableId };

export const clientMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ping'), ref }),
  z.object({ type: z.literal('auth'), ref, token: z.unknown().optional(), agentId: z.unknown().optional() }),
  z.object({ type: z.literal('join'), ...atTable, agentId: z.unknown().optional() }),
  z.object({ type: z.literal('leave'), ...atTable }),
  z.object({
    type: z.literal('sit'), ...atTable, seatIndex: z.unknown().optional(), amount: z.unknown().optional(), idempotencyKey: z.string().min(1).max(128).optional(),
    // a chain table's buy-in: the EIP-2612 permit the player's linked wallet signed, and that wallet (the chain bank's deposit)
    permit: z.unknown().optional(), signerAddress: z.unknown().optional(),
  }),
  z.object({ type: z.literal('action'), ...atTable, seq: z.number(), handId: z.unknown().optional(), action: z.unknown().optional(), amount: z.unknown().optional() }),
  z.object({ type: z.literal('sit_out'), ...atTable }),
  z.object({ type: z.literal('sit_in'), ...atTable }),
  z.object({ type: z.literal('stand_up'), ...atTable }),
  z.object({ type: z.literal('register_for_tournament'), ...atTable, advisorAgentId: z.uuid().nullish() }),
  // a seed for the next hand's deal (docs/dealer.md): the commitment it answers, judged by the room (stale_commitment)
  z.object({ type: z.literal('deal_seed'), ...atTable, commitment: z.string().regex(/^[0-9a-f]{64}$/), seed: z.string().regex(SEED_PATTERN) }),
]);

export type ClientMessage = z.infer<typeof clientMessage>;
export type ClientMessageType = ClientMessage['type'];

/** Every client message type (the fuzz suite reads it; the dispatch table is typed by it). */
export const CLIENT_MESSAGE_TYPES = clientMessage.options.map((o) => o.shape.type.value) as readonly ClientMessageType[];

export type Parsed = { ok: true; message: ClientMessage } | { ok: false; code: string; field?: string };

/**
 * An action that the union would take, taken without it (the message sent most: once per turn),
 * as the union gives it; null for anything else, which goes through the union and gets its code.
 */
function validAction(v: Record<string, unknown>): ClientMessage | null {
  const { tableId, seq } = v;
  if (v.type !== 'action' || typeof tableId !== 'string' || tableId.length < 1 || tableId.length > 64 || typeof seq !== 'number') return null;
  const m: ClientMessage = { type: 'action', tableId, seq };
  // the union's optional fields: present when given (an absent one stays absent)
  if ('ref' in v) m.ref = v.ref;
  if ('handId' in v) m.handId = v.handId;
  if ('action' in v) m.action = v.action;
  if ('amount' in v) m.amount = v.amount;
  return m;
}

/** Parses an object already read from JSON into a client message, or the one code it earns. */
export function parseClientMessage(value: Record<string, unknown>): Parsed {
  const action = validAction(value);
  if (action) return { ok: true, message: action };
  const parsed = clientMessage.safeParse(value);
  if (parsed.success) return { ok: true, message: parsed.data };
  const issue = parsed.error.issues[0]!;
  const field = issue.path[0] === undefined ? undefined : String(issue.path[0]);
  if (field === 'type' || field === undefined) return { ok: false, code: 'unknown_message_type' };
  if (value.type === 'action' && field === 'seq') return { ok: false, code: 'missing_seq' };
  return { ok: false, code: 'bad_request', field };
}
