-- The agent playing a seat, and the agents dealt into a hand, are stored (they were known only to
-- the room's memory): a restart keeps them, and a flag names a decision of a hand the agent
-- actually played (game.flag_agent_decision checks it).

alter table game.table_players add column agent_id uuid references game.agents (id) on delete restrict;
comment on column game.table_players.agent_id is 'The agent of the owner that plays this position (null: the owner in person). Set by game.set_seat_agent when an agent sits.';

alter table game.hand_histories add column agents uuid[] not null default '{}';
comment on column game.hand_histories.agents is 'The agents dealt into the hand (their seats'' agent_id at the deal).';

-- record_hand takes the hand's agents now (re-created by db/functions/game/30_hands.sql)
drop function if exists game.record_hand(text, text, bigint, text, jsonb, jsonb);
