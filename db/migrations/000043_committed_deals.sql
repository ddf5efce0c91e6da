-- Every committed deal revealed (issue 31, "The dealer cannot steer a deal either"; docs/dealer.md).
--
-- A table keeps, sealed, the server seed of its next hand from the moment its commitment is drawn
-- (deal_next: written when a room opens and by every deal, before the commitment is published) and
-- the deal of the hand in play (deal_current: written by game.deal_hand with the contributions it
-- had). The seed is sealed (AES-256-GCM under a key derived from the dealer's signing key, which only
-- the game process holds: server/game/live/deal-seal.ts), so the game login, which reads these rows,
-- learns no deck from them. A hand or a commitment that is never played to its end (a restart, an
-- unload, a force-end, a lease taken over) is stored as an abandoned hand with its real number, its
-- players and its sealed deal; the next room of the table unseals it and stores its revealed deal and
-- a signed record (abandoned: true) chained like any other (game.reveal_abandoned). Until then the
-- table deals no hand (unrevealed_deals > 0), so the chain has no hole.
alter table game.tables
  add column deal_next jsonb,
  add column deal_current jsonb,
  add column abandoned_deals integer not null default 0,
  add column unrevealed_deals integer not null default 0,
  add constraint tables_abandoned_deals_nonnegative check (abandoned_deals >= 0 and unrevealed_deals >= 0);
comment on column game.tables.deal_next is 'The next hand''s committed deal, sealed: {algorithm, handNumber, handId, commitment, sealed}.';
comment on column game.tables.deal_current is 'The deal of the hand in play, sealed, with the contributions it had: revealed if the hand is abandoned.';
comment on column game.tables.abandoned_deals is 'How many committed deals of this table ended abandoned (every one is revealed in a signed record).';
comment on column game.tables.unrevealed_deals is 'Abandoned deals whose seed is not revealed yet: the table deals no hand until it is.';

alter table game.hand_histories add column sealed_deal jsonb;
comment on column game.hand_histories.sealed_deal is 'An abandoned hand''s deal as the table held it, sealed, with its seats; cleared when revealed.';
create index hand_histories_unrevealed_idx on game.hand_histories (table_id, hand_number) where sealed_deal is not null;

-- the deal carries the sealed deals now (db/functions/game/20_seats.sql)
drop function if exists game.deal_hand(text, text, bigint);
