-- A player's identity from their token's grant (issue 18), the game login's part: the claim and the
-- agent registry take the handle (`sid`) of the player's access JWT and derive the player from it
-- (auth_private.user_of_sid); the forms taking a user id go.
drop function if exists claims.open_claim(text, uuid, text, timestamptz, jsonb);
drop function if exists game.create_agent(uuid, text);
drop function if exists game.publish_agent_version(uuid, uuid, jsonb);
drop function if exists game.flag_agent_decision(uuid, uuid, text, text);
drop function if exists game.tournament_reserve(text, uuid, uuid, uuid, integer);
