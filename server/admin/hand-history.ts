// The admin GraphQL's view of a hand's events (issue 33): a hand ended since issue 33 stores its
// history and result as one compact value (server/game/hands/compact.ts), which the schema does not
// show raw (`@behavior -*` on game.hand_histories.compact: bytes an operator cannot read). Each hand
// instead has `stored`: { history, result, readable }, its events and result inflated here from the
// compact value, or its jsonb history and result for a hand stored before. An operator reads a hand
// as before: `{ allGameHandHistories(condition: { handId: "..." }) { nodes { stored } } }`.
import { extendSchema, gql } from 'postgraphile/utils';
import { lambda } from 'postgraphile/grafast';
import { storedHand } from '../game/hands/compact.ts';

type Row = { get(attribute: string): unknown };

export const HandHistoryStoredPlugin = extendSchema(() => ({
  typeDefs: gql`
    extend type GameHandHistory {
      """The hand's events and result as stored, whichever form its row holds: { history, result, readable } (readable false: a compact value that does not inflate)."""
      stored: JSON
    }
  `,
  objects: {
    GameHandHistory: {
      plans: {
        stored($row: Row) {
          return lambda([$row.get('compact'), $row.get('history'), $row.get('result')] as never, ([compact, history, result]: [Buffer | null, unknown, unknown]) =>
            storedHand({ compact, history, result }));
        },
      },
    },
  },
}));
