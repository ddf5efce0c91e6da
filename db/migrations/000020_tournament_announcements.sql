-- What the rooms have announced of each tournament's lifecycle (issue 18): the last state, the last
-- level and the payouts, written by the game process that announced them
-- (game.record_tournament_announced), read by the room that runs the table next (a restart, another
-- process). Each move and each level change is then announced once, in order, the ones made while
-- no room ran the table included.
alter table game.tables add column announced_state text;
alter table game.tables add column announced_level integer;
alter table game.tables add column announced_payouts integer[] not null default '{}';
