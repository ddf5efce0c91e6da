-- The catalog as one environment sees it, the game settings, and the operator's edits.

-- Every section live in p_environment: for each key its concrete-environment row if there is one
-- (which overrides, and hides the key there when it is disabled), else the `all` row; only enabled
-- sections. Baseline first, then unlocks by order.
create or replace function claims.resolved_sections(p_environment text) returns setof claims.claim_sections
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select r.* from (
    select distinct on (s.key) s.*
      from claims.claim_sections s
     where s.environment in (claims_private.deployment(p_environment), 'all')
     order by s.key, (s.environment = 'all')
  ) r
  where r.enabled
  order by (r.kind = 'baseline') desc, r."order", r.key
$$;

-- The game settings of an environment, fail-closed when never set: the board off, the gate on.
create or replace function claims.board_settings(p_environment text)
  returns table (claim_board_enabled boolean, play_transfer_gate_enabled boolean)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce(s.claim_board_enabled, false), coalesce(s.play_transfer_gate_enabled, true)
    from (select claims_private.deployment(p_environment) as environment) e
    left join claims.settings s on s.environment = e.environment
$$;

-- An operator's edit of the catalog or the settings, recorded with the operator in the edit's
-- transaction (claims.catalog_edits). The operator is the admin of the live session p_sid (the
-- `sid` of the operator's access JWT, which the game role's route passes on): a signed-out,
-- expired, player's or made-up session is refused (admin_session_required).
create or replace function claims_private.record_edit(p_sid uuid, p_action text, p_environment text, p_key text, p_change jsonb)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  insert into claims.catalog_edits (admin_id, action, environment, section_key, change)
  values (auth_private.admin_of_session(p_sid), p_action, p_environment, p_key, coalesce(p_change, '{}'));
end;
$$;

-- Sets the game settings of an environment (null leaves a setting as it is).
create or replace function claims.set_board_settings(
  p_sid uuid, p_environment text, p_claim_board_enabled boolean, p_play_transfer_gate_enabled boolean
)
  returns table (claim_board_enabled boolean, play_transfer_gate_enabled boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_was boolean := (select b.claim_board_enabled from claims.board_settings(p_environment) b);
  v_gate_was boolean := (select b.play_transfer_gate_enabled from claims.board_settings(p_environment) b);
begin
  insert into claims.settings as s (environment, claim_board_enabled, play_transfer_gate_enabled)
  values (claims_private.deployment(p_environment), coalesce(p_claim_board_enabled, false), coalesce(p_play_transfer_gate_enabled, true))
  on conflict (environment) do update
    set claim_board_enabled = coalesce(p_claim_board_enabled, s.claim_board_enabled),
        play_transfer_gate_enabled = coalesce(p_play_transfer_gate_enabled, s.play_transfer_gate_enabled),
        updated_at = now();
  perform claims_private.record_edit(p_sid, 'set_settings', p_environment, null,
    jsonb_build_object('claimBoardEnabled', p_claim_board_enabled, 'playTransferGateEnabled', p_play_transfer_gate_enabled));
  -- the play-chip transfer gate's lever flipped: PlayGateSet (cage.gate_events)
  if p_play_transfer_gate_enabled is not null and p_play_transfer_gate_enabled is distinct from v_gate_was then
    perform cage_private.record_play_gate_set(p_environment, p_play_transfer_gate_enabled, v_gate_was, auth_private.admin_of_session(p_sid));
  end if;
  -- switched on: the conditions that follow from state are evaluated for everyone they hold for
  if p_claim_board_enabled and not coalesce(v_was, false) then
    perform claims_private.light_from_state(p_environment);
  end if;
  return query select * from claims.board_settings(p_environment);
end;
$$;

-- kind and cadence of a key are fixed once the key exists, in every environment: an edit that
-- changes them, or a row for the key that disagrees with another environment's, is refused.
create or replace function claims_private.tg_kind_cadence_fixed() returns trigger
  language plpgsql
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op = 'UPDATE' and (new.kind <> old.kind or new.cadence <> old.cadence or new.key <> old.key or new.environment <> old.environment) then
    perform claims_private.refuse('kind_cadence_immutable', 'kind and cadence never change: use a new key');
  end if;
  if tg_op = 'INSERT' then
    -- one insert of a key at a time (rows of other environments do not collide on the unique
    -- (environment, key)): two rows of one new key with different kinds, inserted concurrently,
    -- would each miss the other below and both stand. The second waits here, then sees the first.
    perform pg_advisory_xact_lock(hashtext('claims.claim_sections'), hashtext(new.key));
  end if;
  if tg_op = 'INSERT' and exists (select from claims.claim_sections s
                                   where s.key = new.key and (s.kind <> new.kind or s.cadence <> new.cadence)) then
    perform claims_private.refuse('kind_cadence_immutable', 'this key exists with another kind or cadence: use a new key');
  end if;
  -- a key whose claims are in the ledger still exists, even with no catalog row left: recreating
  -- it with another cadence would turn a once-ever unlock into a weekly payment (or the reverse)
  if tg_op = 'INSERT' and exists (select from claims.claim_ledger l
                                   where l.section_key = new.key and ((l.period = 'once') <> (new.cadence = 'once'))) then
    perform claims_private.refuse('kind_cadence_immutable', 'this key was claimed with another cadence: use a new key');
  end if;
  new.updated_at := now();
  return new;
end;
$$;
drop trigger if exists tg_claim_sections__kind_cadence_fixed on claims.claim_sections;
create trigger tg_claim_sections__kind_cadence_fixed before insert or update on claims.claim_sections
  for each row execute function claims_private.tg_kind_cadence_fixed();

-- An amount from a JSON edit: a non-negative whole number, or invalid_amount.
create or replace function claims_private.amount_of(p_value jsonb) returns bigint
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if jsonb_typeof(p_value) <> 'number' or (p_value::text)::numeric < 0
     or (p_value::text)::numeric <> trunc((p_value::text)::numeric) or (p_value::text)::numeric > 9007199254740991 then
    perform claims_private.refuse('invalid_amount', 'a non-negative whole number of chips');
  end if;
  return (p_value::text)::numeric::bigint;
end;
$$;

-- An environment a catalog row may belong to (`all` or a deployment), or a refusal.
create or replace function claims_private.catalog_environment(p_environment text) returns text
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_environment is null or p_environment not in ('all', 'local', 'staging', 'production') then
    perform claims_private.refuse('invalid_environment', 'all, local, staging or production');
  end if;
  return p_environment;
end;
$$;

-- Creates a section (the operator's POST). kind and cadence are chosen here, once.
create or replace function claims.create_section(p_sid uuid, p_environment text, p_section jsonb) returns claims.claim_sections
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row claims.claim_sections;
begin
  perform claims_private.catalog_environment(p_environment);
  -- `is distinct from`: a missing field is a null type, which `<>` would let through
  if p_section is null or jsonb_typeof(p_section) is distinct from 'object'
     or jsonb_typeof(p_section -> 'key') is distinct from 'string'
     or jsonb_typeof(p_section -> 'kind') is distinct from 'string'
     or jsonb_typeof(p_section -> 'cadence') is distinct from 'string' then
    perform claims_private.refuse('invalid_section', 'key, kind and cadence are required strings');
  end if;
  if coalesce(jsonb_typeof(p_section -> 'conditionKey'), 'null') not in ('string', 'null')
     or coalesce(jsonb_typeof(p_section -> 'order'), 'null') not in ('number', 'null')
     or coalesce(jsonb_typeof(p_section -> 'enabled'), 'null') not in ('boolean', 'null') then
    perform claims_private.refuse('invalid_section', 'conditionKey a string, order an integer, enabled a boolean');
  end if;
  insert into claims.claim_sections as s (environment, key, condition_key, kind, amount, "order", enabled, cadence)
  values (p_environment, p_section ->> 'key', p_section ->> 'conditionKey', p_section ->> 'kind',
          claims_private.amount_of(coalesce(p_section -> 'amount', '0')),
          coalesce((p_section ->> 'order')::integer, 0), coalesce((p_section ->> 'enabled')::boolean, true), p_section ->> 'cadence')
  on conflict on constraint claim_sections_environment_key do nothing
  returning s.* into v_row;
  if v_row.id is null then
    perform claims_private.refuse('section_exists', format('%s in %s', p_section ->> 'key', p_environment));
  end if;
  perform claims_private.record_edit(p_sid, 'create_section', p_environment, v_row.key, p_section);
  return v_row;
exception
  when check_violation or invalid_text_representation or numeric_value_out_of_range then
    perform claims_private.refuse('invalid_section', sqlerrm);
end;
$$;

-- Edits a section of one environment: amount, conditionKey, order, enabled. A `kind` or `cadence`
-- that differs from the key's is refused (409 kind_cadence_immutable). Editing a concrete
-- environment where only the `all` row exists creates that environment's override from it (so
-- `{ enabled:false }` hides the key there only).
create or replace function claims.patch_section(p_sid uuid, p_environment text, p_key text, p_patch jsonb) returns claims.claim_sections
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row claims.claim_sections;
  v_base claims.claim_sections;
begin
  perform claims_private.catalog_environment(p_environment);
  if p_patch is null or jsonb_typeof(p_patch) <> 'object' then
    perform claims_private.refuse('invalid_section', 'an object of edits');
  end if;
  select * into v_row from claims.claim_sections s where s.environment = p_environment and s.key = p_key for update;
  if v_row.id is null then
    select * into v_base from claims.claim_sections s where s.environment = 'all' and s.key = p_key;
    if v_base.id is null then
      perform claims_private.refuse('section_not_found', format('%s in %s', p_key, p_environment));
    end if;
    v_row := v_base;
  end if;
  if (p_patch ? 'kind' and p_patch ->> 'kind' is distinct from v_row.kind)
     or (p_patch ? 'cadence' and p_patch ->> 'cadence' is distinct from v_row.cadence) then
    perform claims_private.refuse('kind_cadence_immutable', 'kind and cadence never change: use a new key');
  end if;
  if p_patch ? 'amount' then v_row.amount := claims_private.amount_of(p_patch -> 'amount'); end if;
  if p_patch ? 'conditionKey' then
    if jsonb_typeof(p_patch -> 'conditionKey') not in ('string', 'null') then
      perform claims_private.refuse('invalid_section', 'conditionKey is a string (null for the baseline)');
    end if;
    v_row.condition_key := p_patch ->> 'conditionKey';
  end if;
  if p_patch ? 'order' then
    if jsonb_typeof(p_patch -> 'order') <> 'number' then perform claims_private.refuse('invalid_section', 'order is an integer'); end if;
    v_row."order" := (p_patch ->> 'order')::integer;
  end if;
  if p_patch ? 'enabled' then
    if jsonb_typeof(p_patch -> 'enabled') <> 'boolean' then perform claims_private.refuse('invalid_section', 'enabled is a boolean'); end if;
    v_row.enabled := (p_patch ->> 'enabled')::boolean;
  end if;
  if v_row.environment = p_environment then
    update claims.claim_sections s
       set amount = v_row.amount, condition_key = v_row.condition_key, "order" = v_row."order", enabled = v_row.enabled
     where s.id = v_row.id
    returning s.* into v_row;
  else
    insert into claims.claim_sections as s (environment, key, condition_key, kind, amount, "order", enabled, cadence)
    values (p_environment, v_row.key, v_row.condition_key, v_row.kind, v_row.amount, v_row."order", v_row.enabled, v_row.cadence)
    on conflict on constraint claim_sections_environment_key do nothing
    returning s.* into v_row;
    if v_row.id is null then
      -- a concurrent edit created this environment's row after we looked: edit that row, as a
      -- patch made after it would (not a unique violation)
      return claims.patch_section(p_sid, p_environment, p_key, p_patch);
    end if;
  end if;
  perform claims_private.record_edit(p_sid, 'patch_section', p_environment, p_key, p_patch);
  return v_row;
exception
  when check_violation or invalid_text_representation or numeric_value_out_of_range then
    perform claims_private.refuse('invalid_section', sqlerrm);
end;
$$;

-- Deletes a section row of one environment. Its claims stay in the ledger, and still block.
create or replace function claims.delete_section(p_sid uuid, p_environment text, p_key text) returns claims.claim_sections
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row claims.claim_sections;
begin
  perform claims_private.catalog_environment(p_environment);
  delete from claims.claim_sections s where s.environment = p_environment and s.key = p_key returning s.* into v_row;
  if v_row.id is null then
    perform claims_private.refuse('section_not_found', format('%s in %s', p_key, p_environment));
  end if;
  perform claims_private.record_edit(p_sid, 'delete_section', p_environment, p_key, '{}');
  return v_row;
end;
$$;
