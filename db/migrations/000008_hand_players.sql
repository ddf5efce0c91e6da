-- The users dealt into each hand, so a player (or the owner of an agent) can read the hands they
-- played: GET /api/hands and /api/hands/:handId on the game role. game.record_hand fills it from
-- the hand's own `hand_started` event (its seats' position ids); the hands stored before are
-- filled the same way here.

alter table game.hand_histories add column players uuid[] not null default '{}';
comment on column game.hand_histories.players is 'The users dealt into the hand (the owners of its positions).';

update game.hand_histories h
   set players = coalesce((
     select array_agg(distinct p.user_id order by p.user_id)
       from jsonb_array_elements(h.history) e
       cross join jsonb_array_elements(e -> 'seats') s
       join game.table_players p on p.table_id = h.table_id
        and p.id = case when s ->> 'playerId' ~ '^[0-9]{1,18}$' then (s ->> 'playerId')::bigint end
      where e ->> 'type' = 'hand_started'), '{}');

create index hand_histories_players_idx on game.hand_histories using gin (players);
create index hand_histories_agents_idx on game.hand_histories using gin (agents);
