-- The attempt limiter's counters (server/auth/rate-limit.ts), written only here: the auth login holds
-- no INSERT, UPDATE or DELETE on auth.attempt_limits, so it can count an attempt but never reset a
-- count or clear a window early. One attempt on p_key in a fixed window of p_window_seconds: the
-- upsert increments the row under its row lock, so concurrent attempts each see a distinct count;
-- a lapsed window starts again at 1. Rows expired an hour ago are swept now and then. Returns the
-- attempts counted in this window (this one included) and the milliseconds until it ends.
create or replace function auth.count_attempt(p_key text, p_window_seconds integer)
  returns table (points integer, ms_before_next bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_now bigint := (extract(epoch from clock_timestamp()) * 1000)::bigint;
begin
  if p_key is null or length(p_key) not between 1 and 255 or p_window_seconds is null or p_window_seconds not between 1 and 86400 then
    perform auth_private.refuse('invalid_attempt', 'a key of 1..255 characters and a window of 1..86400 s');
  end if;
  if random() < 0.01 then
    delete from auth.attempt_limits l where l.expire < v_now - 3600000;
  end if;
  return query
  insert into auth.attempt_limits as l (key, points, expire) values (p_key, 1, v_now + p_window_seconds * 1000::bigint)
  on conflict (key) do update
    set points = case when l.expire is null or l.expire <= v_now then 1 else l.points + 1 end,
        expire = case when l.expire is null or l.expire <= v_now then v_now + p_window_seconds * 1000::bigint else l.expire end
  returning l.points, greatest(l.expire - v_now, 0);
end;
$$;
