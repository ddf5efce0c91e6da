// The websocket's machine-readable contract (issue 21): an AsyncAPI 3.0 document generated from the
// zod union the server parses client messages with (messages.ts), served by the game role at
// GET /asyncapi.json, and from the zod schemas of the messages the server sends (server-messages.ts).
// Each message is one component (its payload: JSON Schema draft-07, the format AsyncAPI 3.0 names,
// from z.toJSONSchema: a client message as the server parses it (its input), a server message as it
// is sent (strict: additionalProperties false)). The document describes the server: a client's
// message is an operation of action `receive`, a server message one of action `send`.
import type { Express } from 'express';
import { z } from 'zod';
import { describeRoute } from '../../http/openapi.ts';
import { clientMessage, CLIENT_MESSAGE_TYPES } from './messages.ts';
import { SERVER_MESSAGES, SERVER_MESSAGE_TYPES } from './server-messages.ts';

const DRAFT_07 = 'application/schema+json;version=draft-07';

const payload = (schema: z.ZodType, io: 'input' | 'output' = 'input') => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-7', io, unrepresentable: 'any', reused: 'inline' }) as Record<string, unknown>;
  return { schemaFormat: DRAFT_07, schema: rest };
};

/**
 * The component name of a server message: its type, unless a client message has that name too (none
 * does today; `server.<type>` then, so a new type on either side never replaces the other's).
 */
export const serverMessageKey = (type: string) => ((CLIENT_MESSAGE_TYPES as readonly string[]).includes(type) ? `server.${type}` : type);

/** The game role's AsyncAPI 3.0 document: the two websocket addresses, what a client may send and what the server sends. */
export function asyncApiDocument(options: { version?: string } = {}) {
  const clientMessages = Object.fromEntries(clientMessage.options.map((option) => {
    const type = option.shape.type.value;
    return [type, { name: type, title: `client: ${type}`, contentType: 'application/json', payload: payload(option) }];
  }));
  const serverMessages = Object.fromEntries(SERVER_MESSAGE_TYPES.map((type) => [serverMessageKey(type), {
    name: type, title: `server: ${type}`, contentType: 'application/json', payload: payload(SERVER_MESSAGES[type], 'output'),
  }]));
  const messages = { ...clientMessages, ...serverMessages };
  const keys = Object.keys(messages);
  const clientKeys = [...CLIENT_MESSAGE_TYPES];
  const serverKeys = SERVER_MESSAGE_TYPES.map(serverMessageKey);
  const refs = (channel: string, names: readonly string[]) => names.map((key) => ({ $ref: `#/channels/${channel}/messages/${key}` }));
  const channelMessages = Object.fromEntries(keys.map((key) => [key, { $ref: `#/components/messages/${key}` }]));
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Poker platform: the live tables (game role websocket)',
      version: options.version ?? '0.1.0',
      description: 'Generated from the zod schemas the server parses client messages with (server/game/live/messages.ts). '
        + 'A message that does not parse answers an `error` message: unknown_message_type, missing_seq or bad_request (naming the field). '
        + 'The messages the server sends are generated from the zod schemas of server/game/live/server-messages.ts (strict: no field beyond those listed; '
        + 'chips are decimal strings, cards two characters); docs/protocol.md says when each is sent. A client should pass over a type it does not know.',
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
        action: 'receive', channel: { $ref: '#/channels/live' }, messages: refs('live', clientKeys),
        summary: 'What a client sends (the server receives it)',
      },
      sendClientMessageAtTable: {
        action: 'receive', channel: { $ref: '#/channels/table' }, messages: refs('table', clientKeys),
        summary: 'What a client sends on a table\'s address',
      },
      receiveServerMessage: {
        action: 'send', channel: { $ref: '#/channels/live' }, messages: refs('live', serverKeys),
        summary: 'What the server sends (a client receives it)',
      },
      receiveServerMessageAtTable: {
        action: 'send', channel: { $ref: '#/channels/table' }, messages: refs('table', serverKeys),
        summary: 'What the server sends on a table\'s address',
      },
    },
    components: { messages },
  };
}

/** GET /asyncapi.json's contract (the game role's OpenAPI document lists it). */
export const asyncApiRoute = describeRoute({
  method: 'get', path: '/asyncapi.json', auth: 'none', summary: 'The websocket\'s AsyncAPI 3.0 document (the client and the server messages)',
  responses: { 200: 'the document (cacheable: public, max-age=300)' },
});

/** Serves the document (built once) at GET /asyncapi.json. */
export function installAsyncApiRoute(app: Express) {
  const document = JSON.stringify(asyncApiDocument());
  app.get(asyncApiRoute.path, (_req, res) => {
    res.set('cache-control', 'public, max-age=300').type('application/json').send(document);
  });
}
