-- A stolen auth login opens no admin session (issue 18): the session is created only with proof of
-- the admin's password. The auth service reads the password's scrypt parameters (never the stored
-- key), derives the key from the password it was given, and auth.create_session compares it with
-- the stored one; the function that handed out the whole hash goes.
drop function if exists auth.admin_credentials(text);
drop function if exists auth.create_session(uuid, bytea, integer);
