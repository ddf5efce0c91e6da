-- Table creation is limited per user per window (game.create_table counts a user's recent tables).
-- The function gains the limit and the window as arguments; the five-argument form goes, so no
-- caller can keep creating through an overload that does not count.
drop function if exists game.create_table(text, text, jsonb, text, uuid);

create index if not exists tables_created_by_created_at on game.tables (created_by, created_at);
