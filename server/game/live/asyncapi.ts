// The websocket's machine-readable contract (issue 21): an AsyncAPI 3.0 document generated from the
// zod union the server parses client messages with (messages.ts), served by the game role at
// GET /asyncapi.json. Each client message is one component (its payload: JSON Schema draft-07, the
// format AsyncAPI 3.0 names, from z.toJSONSchema). The server's messages are described in
// docs/protocol.md; they are not in this document yet.
import type { Express } from 'express';
import { z } from 'zod';
import { describeRoute } from '../../http/openapi.ts';
import { clientMessage, CLIENT_MESSAGE_TYPES } from './messages.ts';

const DRAFT_07 = 'application/schema+json;version=draft-07';

const payload = (schema: z.ZodType) => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-7', io: 'input', unrepresentable: 'any', reused: 'inline' }) as Record<string, unknown>;
  return { schemaFormat: DRAFT_07, schema: rest };
};

/** The game role's AsyncAPI 3.0 document: the two websocket addresses, and what a client may send. */
export function asyncApiDocument(options: { version?: string } = {}) {
  const messages = Object.fromEntries(clientMessage.options.map((option) => {
    const type = option.shape.type.value;
    return [type, { name: type, title: `client: ${type}`, contentType: 'application/json', payload: payload(option) }];
  }));
  const refs = (channel: string) => CLIENT_MESSAGE_TYPES.map((type) => ({ $ref: `#/channels/${channel}/messages/${type}` }));
  const channelMessages = Object.fromEntries(CLIENT_MESSAGE_TYPES.map((type) => [type, { $ref: `#/components/messages/${type}` }]));
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Poker platform: the live tables (game role websocket)',
      version: options.version ?? '0.1.0',
      description: 'Generated from the zod schemas the server parses client messages with (server/game/live/messages.ts). '
        + 'A message that does not parse answers an `error` message: unknown_message_type, missing_seq or bad_request (naming the field). '
        + 'The server\'s messages (game_state, legal, hand_result, ...) are described in docs/protocol.md.',
    },
    defaultContentType: 'application/json',
    channels: {
      live: {
        address: '/ws',
        title: 'Live tables',
        description: 'Join tables with `join`. Identity: the access JWT (Authorization: Bearer on the upgrade, ?token=, or an `auth` message).',
        messages: channelMessages,
      },
      table: {
        address: '/ws/tables/{tableId}',
        title: 'One live table, joined at once',
        parameters: { tableId: { description: 'the table to join on connect ([A-Za-z0-9][A-Za-z0-9_.:-]{0,63})' } },
        messages: channelMessages,
      },
    },
    operations: {
      sendClientMessage: {
        action: 'receive', channel: { $ref: '#/channels/live' }, messages: refs('live'),
        summary: 'What a client sends (the server receives it)',
      },
      sendClientMessageAtTable: {
        action: 'receive', channel: { $ref: '#/channels/table' }, messages: refs('table'),
        summary: 'What a client sends on a table\'s address',
      },
    },
    components: { messages },
  };
}

/** GET /asyncapi.json's contract (the game role's OpenAPI document lists it). */
export const asyncApiRoute = describeRoute({
  method: 'get', path: '/asyncapi.json', auth: 'none', summary: 'The websocket\'s AsyncAPI 3.0 document (the client messages)',
  responses: { 200: 'the document (cacheable: public, max-age=300)' },
});

/** Serves the document (built once) at GET /asyncapi.json. */
export function installAsyncApiRoute(app: Express) {
  const document = JSON.stringify(asyncApiDocument());
  app.get(asyncApiRoute.path, (_req, res) => {
    res.set('cache-control', 'public, max-age=300').type('application/json').send(document);
  });
}
