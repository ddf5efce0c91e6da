-- The minimal agent registry: agents owned by a user, published versions, flagged decisions. The
-- events it produces (first version, republish after a flag, a flagged decision) are the claim
-- board's conditions; the game role reports them (markConditionMet).

create or replace function game.create_agent(p_sid uuid, p_name text) returns game.agents
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  -- the player: the user of the access JWT's live grant (never an id the caller names)
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_agent game.agents;
begin
  if v_user is null or p_name is null or length(btrim(p_name)) not between 1 and 64 then
    perform game_private.refuse('invalid_agent', 'a name of 1..64 characters');
  end if;
  insert into game.agents (owner_user_id, name) values (v_user, btrim(p_name)) returning * into v_agent;
  return v_agent;
end;
$$;

-- The agent, locked, if p_user owns it; else agent_not_found (another user's agent is not shown).
create or replace function game_private.owned_agent(p_user_id uuid, p_agent_id uuid) returns game.agents
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_agent game.agents;
begin
  select * into v_agent from game.agents a where a.id = p_agent_id and a.owner_user_id = p_user_id for update;
  if v_agent.id is null then
    perform game_private.refuse('agent_not_found');
  end if;
  return v_agent;
end;
$$;

-- Publishes the next version. event: 'agent_version_published' for the first version,
-- 'agent_version_republished' for a version published after a decision of the agent was flagged
-- (since the previous version), else null.
create or replace function game.publish_agent_version(p_sid uuid, p_agent_id uuid, p_manifest jsonb)
  returns table (agent_id uuid, version integer, published_at timestamptz, event text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  -- the player: the user of the access JWT's live grant (never an id the caller names)
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_previous game.agent_versions;
  v_version game.agent_versions;
  v_event text;
begin
  perform game_private.owned_agent(v_user, p_agent_id);
  if p_manifest is not null and (jsonb_typeof(p_manifest) <> 'object' or length(p_manifest::text) > 16384) then
    perform game_private.refuse('invalid_agent', 'manifest: an object of at most 16 KiB');
  end if;
  select * into v_previous from game.agent_versions v where v.agent_id = p_agent_id order by v.version desc limit 1;
  insert into game.agent_versions (agent_id, version, manifest)
  values (p_agent_id, coalesce(v_previous.version, 0) + 1, coalesce(p_manifest, '{}'))
  returning * into v_version;
  v_event := case
    when v_previous.agent_id is null then 'agent_version_published'
    when exists (select from game.agent_flags f where f.agent_id = p_agent_id and f.version = v_previous.version)
      then 'agent_version_republished'
  end;
  return query select v_version.agent_id, v_version.version, v_version.published_at, v_event;
end;
$$;

-- Flags a decision of the agent's current version (its owner inspecting a hand): the hand must be
-- one the agent was dealt into (hand_not_found otherwise, so a flag, a claim-board condition,
-- always names a decision the agent made).
create or replace function game.flag_agent_decision(p_sid uuid, p_agent_id uuid, p_hand_id text, p_note text)
  returns game.agent_flags
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  -- the player: the user of the access JWT's live grant (never an id the caller names)
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_version integer;
  v_flag game.agent_flags;
begin
  perform game_private.owned_agent(v_user, p_agent_id);
  select max(v.version) into v_version from game.agent_versions v where v.agent_id = p_agent_id;
  if v_version is null then
    perform game_private.refuse('invalid_agent', 'publish a version first');
  end if;
  if p_hand_id is null or length(p_hand_id) not between 1 and 128 or (p_note is not null and length(p_note) > 1000) then
    perform game_private.refuse('invalid_agent', 'hand id 1..128 characters, note at most 1000 characters');
  end if;
  if not exists (select from game.hand_histories h where h.hand_id = p_hand_id and p_agent_id = any (h.agents)) then
    perform game_private.refuse('hand_not_found', format('agent %s was not dealt into a hand %s', p_agent_id, p_hand_id));
  end if;
  insert into game.agent_flags (agent_id, version, hand_id, note, flagged_by)
  values (p_agent_id, v_version, p_hand_id, p_note, v_user)
  returning * into v_flag;
  return v_flag;
end;
$$;

-- The owner's agent now plays the owner's open position at the table (an agent sat for them).
-- Returns the position id; not_at_table when the owner has no open seat there.
create or replace function game.set_seat_agent(p_table_id text, p_user_id uuid, p_agent_id uuid) returns bigint
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_player bigint;
begin
  perform game_private.owned_agent(p_user_id, p_agent_id);
  update game.table_players p set agent_id = p_agent_id
   where p.table_id = p_table_id and p.user_id = p_user_id and p.status = 'seated'
  returning p.id into v_player;
  if v_player is null then
    perform game_private.refuse('not_at_table');
  end if;
  return v_player;
end;
$$;
