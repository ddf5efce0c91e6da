-- The creator of a table is the player of the access JWT's grant (issue 18): game.create_table takes
-- the handle and derives the creator (it keys the creation limit), never a user id a caller names.
drop function if exists game.create_table(text, text, jsonb, text, uuid, integer, integer, text, text);
