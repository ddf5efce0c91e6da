-- A compact hand history (issue 33): a finished hand's history and result are stored as ONE bytea the
-- game process compressed (server/game/hands/compact.ts: a format byte, the inflated length, raw
-- deflate of `{"history":[...],"result":{...}}`), instead of two jsonb values Postgres parsed and then
-- compressed again with pglz into TOAST at every hand end. Postgres never parses a history on the
-- write path any more; what SQL itself reads of it, the hand_started event (the seats a hand dealt
-- in: game.hand_for_player; the blinds and seats the audit of causes replays from), is written
-- beside it by the process (`started`).
--
-- Old rows keep their jsonb history and result (compact null) and read as before: a finished hand
-- holds exactly one of the two forms. An abandoned hand holds neither (its history is no longer
-- defaulted to '[]'; readers answer an empty history for it, as before).
alter table game.hand_histories
  add column compact bytea,
  add column started jsonb,
  alter column history drop not null,
  alter column history drop default,
  -- a finished hand: exactly one form
  add constraint hand_histories_one_form check (status <> 'finished' or (history is null) <> (compact is null)),
  -- what end_hand checks, on the row too (format 1: 5-byte header; 64 KiB at most)
  add constraint hand_histories_compact_shape check (
    case when compact is null then true when octet_length(compact) not between 6 and 65536 then false else get_byte(compact, 0) = 1 end),
  add constraint hand_histories_started_shape check (
    started is null or (jsonb_typeof(started) = 'object' and started ->> 'type' = 'hand_started'));

-- Stored as compressed by the process: never compressed again by pglz (`external`: moved out of
-- line only if the row would not fit). A row is not toasted below 4096 bytes (the default, about
-- 2 KB, moved the history out of line): a hand's row (its compact history, signed record, deal and
-- started event) stays one inline heap tuple, no TOAST chunk and no TOAST index insert; a row over
-- 4096 bytes (a six-handed hand's 2 KB record) has its record pglz-compressed inline, about 2.2 KB
-- to 0.8 KB, which is what brings it back under (docs/decisions.md, "Issue 33: a compact hand
-- history", has the measurements of 8160, 4096 and 3500).
alter table game.hand_histories alter column compact set storage external;
alter table game.hand_histories set (toast_tuple_target = 4096);

comment on column game.hand_histories.compact is
  E'@behavior -*\nA finished hand''s history and result (the hand_result as sent), compressed by the game process (server/game/hands/compact.ts): byte 0 the format (1), bytes 1-4 the inflated length (big-endian), then raw deflate of {"history":[...],"result":{...}}. Null for a hand stored before issue 33 (history and result hold it) and for an abandoned hand. Read it through GET /api/hands/:handId (a player dealt in) or the admin GraphQL''s `stored` field (server/admin/hand-history.ts), never raw.';
comment on column game.hand_histories.started is
  'The hand''s hand_started event (button, blinds, ante, seats with their position ids), written by the process beside the compact history: what SQL reads of a hand (game.hand_for_player''s seats, the audit of causes). Null for a hand stored before issue 33 (its history holds it).';
comment on column game.hand_histories.history is
  'A hand''s events as stored before issue 33 (jsonb); null for a hand stored since (compact holds them) and for an abandoned one.';

-- The end takes the compact history and the started event instead of the history and result jsonb.
drop function if exists game.end_hand(text, text, bigint, jsonb, bigint, integer, jsonb, jsonb, uuid[], timestamptz, bigint, jsonb, text, text, text);

-- The audit of causes reads `started` (re-created by db/functions/cage/47_cause_audit.sql); its
-- columns are unchanged.

-- The listing reads the compact history (the caller's net is summed by the process now).
create or replace view game.hand_records with (security_invoker = true) as
select h.hand_id, h.table_id, h.hand_number, h.status, h.started_at, h.ended_at, h.agents, h.players, h.result,
       h.record_hash, h.sealed_deal, h.compact
  from game.hand_histories h;
