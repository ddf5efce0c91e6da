// A PHH reader written from the specification (https://github.com/uoftcprg/phh-std: spec.rst,
// required.rst, optional.rst, user.rst), independent of the writer (server/game/hands/phh.ts): no
// PHH reader installs from the npm registry (PokerKit is Python). It reads the TOML subset PHH files
// use — comments, bare keys, `[name]` tables (the `.phhs` form: one hand per table), basic and
// literal strings, integers, floats, booleans, local times and arrays (multi-line, trailing comma)
// — and refuses everything else (inline tables, dotted or quoted keys, dates, duplicate keys) with
// an error rather than guessing. Then the PHH rules: the fields and their types, the arrays one per
// player, and the action grammar with its card notation.

export type TomlValue = bigint | number | string | boolean | TomlTime | TomlValue[];
export interface TomlTime { kind: 'local_time'; text: string }
export type TomlTable = Record<string, TomlValue>;

export class PhhError extends Error {}

class Cursor {
  at = 0;
  line = 1;
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  get done() { return this.at >= this.text.length; }
  peek(n = 0) { return this.text[this.at + n] ?? ''; }
  fail(what: string): never { throw new PhhError(`line ${this.line}: ${what}`); }
  next(): string {
    const ch = this.text[this.at++] ?? '';
    if (ch === '\n') this.line++;
    return ch;
  }
  /** Spaces and tabs only. */
  blank() { while (this.peek() === ' ' || this.peek() === '\t') this.next(); }
  comment() {
    if (this.peek() !== '#') return;
    while (!this.done && this.peek() !== '\n') {
      const ch = this.next();
      if (ch !== '\t' && (ch < ' ' || ch === '\u007f')) this.fail('a control character in a comment');
    }
  }
  /** The end of a line: blanks, an optional comment, a newline (or the end). */
  endOfLine() {
    this.blank();
    this.comment();
    if (this.peek() === '\r' && this.peek(1) === '\n') this.next();
    if (this.done) return;
    if (this.peek() !== '\n') this.fail(`unexpected ${JSON.stringify(this.peek())}`);
    this.next();
  }
  /** Whitespace, newlines and comments (inside arrays). */
  space() {
    for (;;) {
      this.blank();
      this.comment();
      if (this.peek() === '\n' || (this.peek() === '\r' && this.peek(1) === '\n')) this.next();
      else return;
    }
  }
}

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

function key(c: Cursor): string {
  let k = '';
  while (/[A-Za-z0-9_-]/.test(c.peek())) k += c.next();
  if (!BARE_KEY.test(k)) c.fail(`a key this reader does not read (${JSON.stringify(c.peek())}: only bare keys)`);
  return k;
}

function basicString(c: Cursor): string {
  c.next();
  if (c.peek() === '"' && c.peek(1) === '"') c.fail('multi-line strings are not read');
  let out = '';
  for (;;) {
    if (c.done || c.peek() === '\n') c.fail('an unterminated string');
    const ch = c.next();
    if (ch === '"') return out;
    if (ch !== '\t' && (ch < ' ' || ch === '\u007f')) c.fail('a control character in a string');
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    const esc = c.next();
    const simple: Record<string, string> = { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', '"': '"', '\\': '\\' };
    if (esc in simple) out += simple[esc];
    else if (esc === 'u' || esc === 'U') {
      const hex = c.text.slice(c.at, c.at + (esc === 'u' ? 4 : 8));
      if (!/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== (esc === 'u' ? 4 : 8)) c.fail('a bad unicode escape');
      const code = parseInt(hex, 16);
      if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) c.fail('not a unicode scalar value');
      out += String.fromCodePoint(code);
      c.at += hex.length;
    } else c.fail(`a bad escape \\${esc}`);
  }
}

function literalString(c: Cursor): string {
  c.next();
  if (c.peek() === "'" && c.peek(1) === "'") c.fail('multi-line strings are not read');
  let out = '';
  for (;;) {
    if (c.done || c.peek() === '\n') c.fail('an unterminated string');
    const ch = c.next();
    if (ch === "'") return out;
    if (ch !== '\t' && (ch < ' ' || ch === '\u007f')) c.fail('a control character in a string');
    out += ch;
  }
}

function array(c: Cursor): TomlValue[] {
  c.next();
  const items: TomlValue[] = [];
  for (;;) {
    c.space();
    if (c.peek() === ']') {
      c.next();
      return items;
    }
    items.push(value(c));
    c.space();
    if (c.peek() === ',') c.next();
    else if (c.peek() !== ']') c.fail('expected , or ] in an array');
  }
}

/** A number, boolean or local time: the characters up to a delimiter, judged whole. */
function scalar(c: Cursor): TomlValue {
  let word = '';
  while (!c.done && !/[\s,\]#]/.test(c.peek())) word += c.next();
  if (word === 'true') return true;
  if (word === 'false') return false;
  if (/^[+-]?(0|[1-9](_?[0-9])*)$/.test(word)) return BigInt(word.replace(/_/g, ''));
  if (/^[+-]?(inf|nan)$/.test(word)) return word.includes('nan') ? NaN : word.startsWith('-') ? -Infinity : Infinity;
  if (/^[+-]?(0|[1-9](_?[0-9])*)(\.[0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?$/.test(word) && /[.eE]/.test(word)) {
    return Number(word.replace(/_/g, ''));
  }
  const time = /^([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9]|60)(\.[0-9]+)?$/.exec(word);
  if (time) return { kind: 'local_time', text: word };
  if (/^0[0-9xob]/.test(word.replace(/^[+-]/, ''))) c.fail(`a number form this reader does not read: ${word}`);
  return c.fail(`a value this reader does not read: ${JSON.stringify(word || c.peek())}`);
}

function value(c: Cursor): TomlValue {
  const ch = c.peek();
  if (ch === '"') return basicString(c);
  if (ch === "'") return literalString(c);
  if (ch === '[') return array(c);
  if (ch === '{') c.fail('inline tables are not read');
  return scalar(c);
}

/** The TOML subset: the root table's keys, and `[name]` tables below it (no deeper), in the file's order. */
export function parseToml(text: string): { root: TomlTable; tables: [string, TomlTable][] } {
  const c = new Cursor(text);
  const root: TomlTable = Object.create(null);
  const tables: [string, TomlTable][] = [];
  let current = root;
  for (;;) {
    c.space();
    if (c.done) return { root, tables };
    if (c.peek() === '[') {
      c.next();
      if (c.peek() === '[') c.fail('arrays of tables are not read');
      c.blank();
      const name = key(c);
      c.blank();
      if (c.next() !== ']') c.fail('a table header this reader does not read (dotted or quoted)');
      if (tables.some(([t]) => t === name) || Object.hasOwn(root, name)) c.fail(`${name} defined twice`);
      current = Object.create(null);
      tables.push([name, current]);
      c.endOfLine();
      continue;
    }
    const k = key(c);
    c.blank();
    if (c.next() !== '=') c.fail(`expected = after ${k}`);
    c.blank();
    if (Object.hasOwn(current, k) || (current === root && tables.some(([t]) => t === k))) c.fail(`key ${k} defined twice`);
    current[k] = value(c);
    c.endOfLine();
  }
}

// ---------------------------------------------------------------------------------------------
// PHH

export type PhhAction =
  | { actor: 'd'; kind: 'db'; cards: string[]; commentary: string | null }
  | { actor: 'd'; kind: 'dh'; player: number; cards: (string | null)[]; commentary: string | null }
  | { actor: number; kind: 'f' | 'cc'; commentary: string | null }
  | { actor: number; kind: 'cbr'; amount: bigint; commentary: string | null }
  | { actor: number; kind: 'sm'; cards: (string | null)[] | null | '-'; commentary: string | null };

export interface PhhHand {
  variant: 'NT';
  antes: bigint[];
  blindsOrStraddles: bigint[];
  minBet: bigint;
  startingStacks: bigint[];
  actions: PhhAction[];
  /** The optional and user-defined fields as read (checked for their types where the spec gives one). */
  fields: TomlTable;
}

/** Cards: two characters each, ?? for an unknown card (null). */
export function parseCards(text: string, allowUnknown: boolean): (string | null)[] {
  if (text.length === 0 || text.length % 2 !== 0) throw new PhhError(`bad cards ${JSON.stringify(text)}`);
  const out: (string | null)[] = [];
  for (let i = 0; i < text.length; i += 2) {
    const card = text.slice(i, i + 2);
    if (card === '??' && allowUnknown) out.push(null);
    else if (/^[2-9TJQKA][cdhs]$/.test(card)) out.push(card);
    else throw new PhhError(`bad card ${JSON.stringify(card)} in ${JSON.stringify(text)}`);
  }
  return out;
}

/** One action notation: `[[Actor Action[ Arguments...]][ # Commentary]]` (no-ops refused: we never write them). */
export function parseAction(text: string, players: number): PhhAction {
  const hash = text.indexOf('#');
  const commentary = hash < 0 ? null : text.slice(hash + 1).trim();
  const words = (hash < 0 ? text : text.slice(0, hash)).trim().split(/\s+/).filter(Boolean);
  const player = (w: string | undefined) => {
    const m = /^p([1-9][0-9]*)$/.exec(w ?? '');
    const n = m ? Number(m[1]) : 0;
    if (n < 1 || n > players) throw new PhhError(`not a player of this hand: ${w}`);
    return n;
  };
  const [actor, kind, ...args] = words;
  if (actor === 'd' && kind === 'db' && args.length === 1) return { actor: 'd', kind: 'db', cards: parseCards(args[0]!, false) as string[], commentary };
  if (actor === 'd' && kind === 'dh' && args.length === 2) return { actor: 'd', kind: 'dh', player: player(args[0]), cards: parseCards(args[1]!, true), commentary };
  if (actor === 'd') throw new PhhError(`a dealer action this reader does not read: ${text}`);
  const who = player(actor);
  if ((kind === 'f' || kind === 'cc') && args.length === 0) return { actor: who, kind, commentary };
  if (kind === 'cbr' && args.length === 1 && /^[1-9][0-9]*$/.test(args[0]!)) return { actor: who, kind, amount: BigInt(args[0]!), commentary };
  if (kind === 'sm' && args.length === 0) return { actor: who, kind, cards: null, commentary };
  if (kind === 'sm' && args.length === 1) return { actor: who, kind, cards: args[0] === '-' ? '-' : parseCards(args[0]!, true), commentary };
  throw new PhhError(`an action this reader does not read (no-limit hold'em: f, cc, cbr, sm): ${JSON.stringify(text)}`);
}

const OPTIONAL: Record<string, (v: TomlValue, n: number) => boolean> = {
  author: isString, event: isString, url: isString, venue: isString, address: isString, city: isString, region: isString,
  postal_code: isString, country: isString, time_zone: isString, time_zone_abbreviation: isString, currency: isString, currency_symbol: isString,
  time: (v) => typeof v === 'object' && !Array.isArray(v) && v.kind === 'local_time',
  day: isInteger, month: isInteger, year: isInteger, level: isInteger, seat_count: isInteger,
  hand: (v) => isString(v) || isInteger(v), table: (v) => isString(v) || isInteger(v),
  seats: (v, n) => perPlayer(v, n, isInteger), players: (v, n) => perPlayer(v, n, isString),
  finishing_stacks: (v, n) => perPlayer(v, n, isAmount), winnings: (v, n) => perPlayer(v, n, isAmount),
  ante_trimming_status: (v) => typeof v === 'boolean', time_limit: isAmount, time_banks: (v, n) => perPlayer(v, n, isAmount),
};
function isString(v: TomlValue) { return typeof v === 'string'; }
function isInteger(v: TomlValue) { return typeof v === 'bigint'; }
function isAmount(v: TomlValue) { return (typeof v === 'bigint' && v >= 0n) || (typeof v === 'number' && v >= 0); }
function perPlayer(v: TomlValue, n: number, each: (x: TomlValue) => boolean) { return Array.isArray(v) && v.length === n && v.every(each); }

/** The integers of a per-player array (this reader takes chips as integers: floats are refused). */
function integers(t: TomlTable, name: string, n: number | null): bigint[] {
  const v = t[name];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'bigint' && x >= 0n)) throw new PhhError(`${name}: an array of non-negative integers`);
  if (n !== null && v.length !== n) throw new PhhError(`${name}: one per player (${n}), got ${v.length}`);
  return v as bigint[];
}

/** One hand's fields, judged by the specification (variant NT only). */
export function readHand(t: TomlTable): PhhHand {
  if (t.variant !== 'NT') throw new PhhError(`variant: this reader reads NT only, got ${String(t.variant)}`);
  const startingStacks = integers(t, 'starting_stacks', null);
  const n = startingStacks.length;
  if (n < 2 || startingStacks.some((s) => s === 0n)) throw new PhhError('starting_stacks: two players or more, every stack above zero');
  if (typeof t.min_bet !== 'bigint' || t.min_bet <= 0n) throw new PhhError('min_bet: a positive integer');
  for (const forbidden of ['bring_in', 'small_bet', 'big_bet']) if (forbidden in t) throw new PhhError(`${forbidden}: not a field of NT`);
  const actions = t.actions;
  if (!Array.isArray(actions) || !actions.every((a) => typeof a === 'string')) throw new PhhError('actions: an array of strings');
  const fields: TomlTable = {};
  const required = new Set(['variant', 'antes', 'blinds_or_straddles', 'min_bet', 'starting_stacks', 'actions']);
  for (const [name, v] of Object.entries(t)) {
    if (required.has(name)) continue;
    if (name.startsWith('_')) fields[name] = v;
    else if (!OPTIONAL[name]) throw new PhhError(`${name}: not a PHH field (user-defined fields start with _)`);
    else if (!OPTIONAL[name](v, n)) throw new PhhError(`${name}: not of the type the specification gives`);
    else fields[name] = v;
  }
  return {
    variant: 'NT', antes: integers(t, 'antes', n), blindsOrStraddles: integers(t, 'blinds_or_straddles', n), minBet: t.min_bet,
    startingStacks, actions: (actions as string[]).map((a) => parseAction(a, n)), fields,
  };
}

/** A `.phh` file: one hand (no tables). */
export function readPhh(text: string): PhhHand {
  const { root, tables } = parseToml(text);
  if (tables.length > 0) throw new PhhError('a .phh file holds one hand, not tables');
  return readHand(root);
}

/** A `.phhs` file: the hands, one per table, in the file's order (nothing outside the tables). */
export function readPhhs(text: string): { name: string; hand: PhhHand }[] {
  const { root, tables } = parseToml(text);
  if (Object.keys(root).length > 0) throw new PhhError(`a .phhs file holds tables only, not ${Object.keys(root)[0]}`);
  return tables.map(([name, t]) => ({ name, hand: readHand(t) }));
}
