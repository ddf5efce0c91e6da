-- Signature changes of functions that the repeatable folders used to drop themselves (db/README:
-- a function whose signature changes is dropped in a numbered migration, never in db/functions/).
-- These ran on every migrate before; here they run once, before the repeatables create the new forms.
drop function if exists cage_private.existing_entry(text, text, bigint);
drop function if exists game.stand_up(text, uuid);
drop function if exists game.begin_hand(text, text);
drop function if exists game.finish_hand(text, text, jsonb, bigint);
drop function if exists game.record_hand(text, text, bigint, text, jsonb, jsonb, uuid[]);
drop function if exists game.abandon_hand(text);
