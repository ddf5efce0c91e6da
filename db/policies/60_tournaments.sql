-- Tournaments: each role executes only the lifecycle moves it makes (db/functions/tournaments).
--   cage    the money legs: an entry fee, a refund, a payout (and its failure);
--   game    the registrations it takes, the hands it deals, the operator's force-end, the reads;
--   worker  the timers: the grace, the blind levels, a reserve's expiry, settlement, re-posting
--           payouts, and re-arming after a restart.
grant execute on function
  cage.open_tournament_entry(uuid, text, text, integer, bigint, integer),
  cage.refund_tournament_entry(uuid, text),
  cage.pay_tournament_payout(text, integer, bigint),
  cage.mark_payout_failed(text, integer, text)
  to poker_cage;
grant select on cage.payout_intents to poker_cage, poker_admin;

grant execute on function
  game.tournament_reserve(text, uuid, uuid, uuid, integer),
  game.tournament_release_reserve(text, uuid, bigint),
  game.tournament_force_end(text),
  game.tournament_payouts(text),
  game.set_tournament_trace(text, jsonb),
  game.record_tournament_announced(text, text, integer, integer[])
  to poker_game;

grant usage on schema game to poker_worker;
grant execute on function
  game.tournament_begin_play(text),
  game.tournament_advance_level(text, integer),
  game.tournament_release_reserve(text, uuid, bigint),
  game.tournament_rearm(),
  cage.settle_tournament(text),
  cage.repost_payout(text),
  cage.mark_payout_failed(text, integer, text)
  to poker_worker;

drop policy if exists payout_intents_read on cage.payout_intents;
create policy payout_intents_read on cage.payout_intents for select to poker_cage, poker_admin using (true);
