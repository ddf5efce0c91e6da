-- A stolen auth login resets no admin's password (issue 18): the reset token is made in SQL and
-- leaves only in the mail job (graphile-worker's `send_password_reset`, which the worker sends);
-- the auth login never sees it. The form that took a token hash from the caller goes.
drop function if exists auth.request_password_reset(text, bytea, integer);
