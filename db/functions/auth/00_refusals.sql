-- Business refusals of the auth service: one SQLSTATE each (class AU), the spec's code (or the
-- spec's exact error text) as the message. server/http/errors.ts maps each to its HTTP status.
create or replace function auth_private.refuse(p_code text, p_detail text default null) returns void
  language plpgsql volatile
  set search_path = pg_catalog
as $$
begin
  raise exception using
    errcode = case p_code
      when 'invite_required' then 'AUINR'
      when 'invite_invalid' then 'AUINV'
      when 'account_creation_disabled' then 'AUCRE'
      when 'invalid_invite_request' then 'AUIRQ'
      when 'invalid_identity' then 'AUIDN'
      when 'invalid walletAddress' then 'AUADR'
      when 'no nonce' then 'AUNON'
      when 'wallet already linked to another account' then 'AUSYB'
      when 'wallet_not_found' then 'AUWNF'
      when 'invalid_nonce_request' then 'AUNRQ'
      when 'invalid_signing_key' then 'AUKEY'
      when 'invalid_session_request' then 'AUSRQ'
      when 'reset_token_invalid' then 'AURTI'
      when 'reset_token_expired' then 'AURTE'
      else 'AUXXX'
    end,
    message = p_code,
    detail = coalesce(p_detail, '');
end;
$$;
