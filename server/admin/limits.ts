// What an admin GraphQL request may cost, judged before anything is planned: the planner is
// synchronous and the event loop is every role's, so a query's depth, aliases and selections are
// counted on its parsed document (fragments expanded, with a budget so an expansion cannot run away)
// and an oversize one is refused with a coded 400. The parse itself is bounded by a token count.
import {
  GraphQLError, Kind, parse, type DocumentNode, type FragmentDefinitionNode, type SelectionSetNode,
} from 'postgraphile/graphql';

export interface QueryLimits {
  maxDepth: number;
  maxAliases: number;
  /** Fields and fragment spreads, counted as often as fragments expand. */
  maxSelections: number;
  maxTokens: number;
}

export interface QueryCost {
  depth: number;
  aliases: number;
  selections: number;
}

/** The limit a query passes, or why not: a coded refusal and a sentence for the client. */
export type Judgement = { ok: true; cost: QueryCost } | { ok: false; code: 'query_too_complex' | 'graphql_syntax_error'; reason: string };

class OverBudget extends Error {}

export function measure(document: DocumentNode, limits: QueryLimits): QueryCost {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const cost: QueryCost = { depth: 0, aliases: 0, selections: 0 };
  const expanding = new Set<string>();
  const count = (key: keyof QueryCost, value: number, max: number) => {
    cost[key] = key === 'depth' ? Math.max(cost.depth, value) : cost[key] + value;
    if (cost[key] > max) throw new OverBudget(key);
  };
  const walk = (set: SelectionSetNode, depth: number): void => {
    count('depth', depth, limits.maxDepth);
    for (const s of set.selections) {
      count('selections', 1, limits.maxSelections);
      if (s.kind === Kind.FIELD) {
        if (s.alias) count('aliases', 1, limits.maxAliases);
        if (s.selectionSet) walk(s.selectionSet, depth + 1);
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        walk(s.selectionSet, depth);
      } else {
        const fragment = fragments.get(s.name.value);
        // an unknown fragment or a cycle is graphql's validation's to name; it adds nothing here
        if (!fragment || expanding.has(s.name.value)) continue;
        expanding.add(s.name.value);
        walk(fragment.selectionSet, depth);
        expanding.delete(s.name.value);
      }
    }
  };
  for (const d of document.definitions) if (d.kind === Kind.OPERATION_DEFINITION) walk(d.selectionSet, 1);
  return cost;
}

/** Parses (token-bounded) and measures. */
export function judge(query: string, limits: QueryLimits): Judgement {
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens: limits.maxTokens, noLocation: true });
  } catch (err) {
    const message = err instanceof GraphQLError ? err.message : 'the query does not parse';
    if (/Parsing aborted/.test(message)) return { ok: false, code: 'query_too_complex', reason: `more than ${limits.maxTokens} tokens` };
    return { ok: false, code: 'graphql_syntax_error', reason: message };
  }
  try {
    return { ok: true, cost: measure(document, limits) };
  } catch (err) {
    if (!(err instanceof OverBudget)) throw err;
    const which = err.message as keyof QueryCost;
    const max = { depth: limits.maxDepth, aliases: limits.maxAliases, selections: limits.maxSelections }[which];
    return { ok: false, code: 'query_too_complex', reason: `more than ${max} ${which === 'depth' ? 'levels deep' : which}` };
  }
}
