-- When the hand holding a table was dealt: set by game.begin_hand, read by game.abandon_hand so an
-- abandoned hand's history carries its deal time (a finished one gets it from the dealer).
alter table game.tables add column current_hand_started_at timestamptz;
comment on column game.tables.current_hand_started_at is 'When current_hand_id was begun (null with it).';
