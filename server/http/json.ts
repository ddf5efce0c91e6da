// One JSON rule for bigint across the HTTP roles, their responses and their role-to-role calls: a
// bigint becomes its decimal string (chips never pass through a float). The spec's `amount: number`
// fields are converted where they are built; the websocket keeps its own wire format (live/wire.ts).
export function bigintAsString(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
