// Where a thread's time goes: a V8 CPU profile (the inspector's Profiler) over a window, its
// samples bucketed into the parts of the live path. Two ways to reach the profiler: this process's
// own main thread (node:inspector) or another node process started with `--inspect=127.0.0.1:0`
// (the Chrome DevTools Protocol over its websocket).
//
// A sample's time goes to the part of the code it was taken in (self time). Native frames (a
// builtin, a syscall such as writev) and Node's own modules (node:net, node:internal/...) have no
// part of their own: they go to their nearest caller in a file of ours or of a package. So a writev
// is the SQL's when pg's connection wrote it and the websocket's when ws's sender did. The profiler
// samples a thread that is descheduled inside a syscall as being in that syscall, so a part's time
// here is the thread's busy time (running or waiting in the kernel), not only its CPU; on a machine
// whose cores are all busy, a writev that wakes Postgres is mostly the time Postgres runs.
import { Session } from 'node:inspector/promises';
import WebSocket from 'ws';

export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface Profiler {
  start(): Promise<void>;
  stop(): Promise<CpuProfile>;
  close(): Promise<void>;
}

/** Microseconds between samples (V8's default is 1000). */
const SAMPLING_INTERVAL_US = 1000;

/** This process's main thread. */
export function selfProfiler(): Profiler {
  const session = new Session();
  session.connect();
  return {
    async start() {
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: SAMPLING_INTERVAL_US });
      await session.post('Profiler.start');
    },
    async stop() {
      const { profile } = await session.post('Profiler.stop');
      await session.post('Profiler.disable');
      return profile as unknown as CpuProfile;
    },
    async close() {
      session.disconnect();
    },
  };
}

/** Another node process's main thread, through the inspector websocket it printed (`Debugger listening on ws://...`). */
export async function remoteProfiler(inspectorUrl: string): Promise<Profiler> {
  const ws = new WebSocket(inspectorUrl, { perMessageDeflate: false, maxPayload: 1 << 30 });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  let next = 0;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  ws.on('message', (raw) => {
    const m = JSON.parse(raw.toString()) as { id?: number; result?: unknown; error?: { message: string } };
    const p = m.id === undefined ? undefined : pending.get(m.id);
    if (!p) return;
    pending.delete(m.id!);
    if (m.error) p.reject(new Error(`inspector: ${m.error.message}`));
    else p.resolve(m.result);
  });
  const post = (method: string, params?: unknown) => new Promise<any>((resolve, reject) => {
    const id = ++next;
    pending.set(id, { resolve, reject });
    ws.send(JSON.stringify({ id, method, params }));
  });
  return {
    async start() {
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: SAMPLING_INTERVAL_US });
      await post('Profiler.start');
    },
    async stop() {
      const { profile } = await post('Profiler.stop');
      await post('Profiler.disable');
      return profile as CpuProfile;
    },
    async close() {
      ws.close();
    },
  };
}

/** The parts, in the order they are printed. */
export const PARTS = [
  'engine (server/game/poker)',
  'state & serialisation (wire.ts, JSON)',
  'websocket (ws)',
  'SQL (pg)',
  'HTTP between roles (undici, http, express)',
  'spans (@opentelemetry, its hooks)',
  'timers',
  'socket writes flushed later (pg or ws: no caller on the stack)',
  'live room (server/game/live, rest; the floor\'s server)',
  'rest of server/',
  'logging (pino)',
  'garbage collector',
  'other',
] as const;
export type Part = (typeof PARTS)[number];

const HTTP_PACKAGES = /\/node_modules\/(undici|express|router|body-parser|finalhandler|send|serve-static|raw-body|on-finished|on-headers|content-type|type-is|accepts|negotiator|mime-types|qs|cookie|vary|depd|statuses|http-errors|iconv-lite|encodeurl|etag|fresh|parseurl|proxy-addr|forwarded|ipaddr\.js|media-typer|path-to-regexp|safe-buffer|destroy|unpipe|ee-first|merge-descriptors|jose)\//;
const SPAN_PACKAGES = /\/node_modules\/(@opentelemetry|import-in-the-middle|require-in-the-middle|shimmer|module-details-from-path)\//;
const PG_PACKAGES = /\/node_modules\/(pg|pg-protocol|pg-pool|pg-types|pg-connection-string|pg-int8|postgres-array|postgres-bytea|postgres-date|postgres-interval|pgpass|split2)\//;

/** The live benchmark's floor (live-floor.ts): its own code is what the room's is in the product, its JSON the same serialisation. */
const FLOOR = '/bench/lib/live-floor.ts';

/** The part a frame of a file (not node:, not native) belongs to. */
function partOfFile(url: string): Part {
  if (url.includes('/server/game/poker/')) return 'engine (server/game/poker)';
  if (url.includes('/server/game/live/wire.ts')) return 'state & serialisation (wire.ts, JSON)';
  if (url.includes('/node_modules/ws/')) return 'websocket (ws)';
  if (PG_PACKAGES.test(url)) return 'SQL (pg)';
  if (HTTP_PACKAGES.test(url) || url.includes('/server/http/')) return 'HTTP between roles (undici, http, express)';
  if (SPAN_PACKAGES.test(url) || url.includes('/server/telemetry/')) return 'spans (@opentelemetry, its hooks)';
  if (/\/node_modules\/(pino|pino-std-serializers|sonic-boom|thread-stream|fast-redact|quick-format-unescaped|atomic-sleep|on-exit-leak-free|safe-stable-stringify)\//.test(url)) return 'logging (pino)';
  if (url.includes('/server/game/live/') || url.endsWith(FLOOR)) return 'live room (server/game/live, rest; the floor\'s server)';
  if (url.includes('/server/')) return 'rest of server/';
  return 'other';
}

/** A frame with no caller of a file: node's own modules and natives, by what they are. */
function partOfNode(url: string, functionName: string): Part {
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (url === 'node:internal/timers' || url === 'node:timers') return 'timers';
  if (/^node:(_http_|http|https|internal\/http)/.test(url)) return 'HTTP between roles (undici, http, express)';
  return 'other';
}

const isFile = (url: string) => url !== '' && !url.startsWith('node:');
const JSON_BUILTINS = new Set(['stringify', 'parse', 'JSON.stringify', 'JSON.parse']);
const WRITES = /^(writev|writeBuffer|writeUtf8String|writeLatin1String|writeAsciiString|writeUcs2String)$/;

export interface Breakdown {
  /** Busy time (µs, idle excluded) by part. */
  parts: Map<Part, number>;
  /** Of each part, the time in write syscalls (writev and its kin), µs. */
  writes: Map<Part, number>;
  /** The files most sampled within 'other' (µs), for the next person's curiosity. */
  otherUrls: Map<string, number>;
  /** The window's length and its idle time, µs. */
  wallUs: number;
  idleUs: number;
}

/**
 * A native frame called from our own code that belongs to a part other than its caller's: JSON
 * built-ins called from server/ are serialisation (wire.ts builds, ws.ts and room.ts stringify and
 * parse), and a socket write called from server/game/live/ is a websocket's (the live code corks
 * and uncorks its clients' sockets around a broadcast, so ws's frames are not on the stack then;
 * its SQL goes through pg, whose frames would be nearer).
 */
function nativeOf(url: string, functionName: string, write: boolean, callerUrl: string): Part | null {
  if (url !== '') return null;
  if (JSON_BUILTINS.has(functionName) && (callerUrl.includes('/server/') || callerUrl.endsWith(FLOOR))) return 'state & serialisation (wire.ts, JSON)';
  if (write && callerUrl.includes('/server/game/live/')) return 'websocket (ws)';
  return null;
}

/** ws.ts's own framing and writing of outgoing messages (batchedSend, its flush, textFrames). */
const WS_FRAMING = new Set(['batchedSend', 'flush', 'textFrames']);

/** Each profile node's part (self time), found once per node. */
function nodeParts(profile: CpuProfile): Map<number, { part: Part; write: boolean; url: string }> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const out = new Map<number, { part: Part; write: boolean; url: string }>();
  for (const n of profile.nodes) {
    const { url, functionName } = n.callFrame;
    const write = url === '' && WRITES.test(functionName);
    // the nearest caller in a file; on the way, the nearest of node's own modules
    let at: number | undefined = n.id;
    let nodeUrl = url;
    while (at !== undefined && !isFile(byId.get(at)!.callFrame.url)) {
      if (!nodeUrl) nodeUrl = byId.get(at)!.callFrame.url;
      at = parent.get(at);
    }
    if (at !== undefined) {
      const caller = byId.get(at)!.callFrame;
      const callerUrl = caller.url;
      // the game role frames and writes its websocket messages itself (ws.ts batchedSend): that work is the websocket's
      const framing = callerUrl.endsWith('/server/game/live/ws.ts') && WS_FRAMING.has(caller.functionName);
      out.set(n.id, { part: framing ? 'websocket (ws)' : nativeOf(url, functionName, write, callerUrl) ?? partOfFile(callerUrl), write, url: callerUrl });
    } else if (write) {
      // a write a stream flushed from libuv's callback after an earlier one completed: whose socket it was is not on the stack
      out.set(n.id, { part: 'socket writes flushed later (pg or ws: no caller on the stack)', write, url: functionName });
    } else {
      out.set(n.id, { part: partOfNode(nodeUrl, functionName), write, url: nodeUrl || functionName });
    }
  }
  return out;
}

export function breakdown(profile: CpuProfile): Breakdown {
  const parts = nodeParts(profile);
  const idleIds = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  const result: Breakdown = { parts: new Map(), writes: new Map(), otherUrls: new Map(), wallUs: profile.endTime - profile.startTime, idleUs: 0 };
  const add = <K>(m: Map<K, number>, k: K, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  for (let i = 0; i < profile.samples.length; i++) {
    // a sample stands for the time until the next one (the last: until the profile's end)
    const us = i + 1 < profile.timeDeltas.length ? profile.timeDeltas[i + 1]! : Math.max(0, profile.endTime - profile.startTime - profile.timeDeltas.reduce((a, b) => a + b, 0));
    const id = profile.samples[i]!;
    if (idleIds.has(id)) {
      result.idleUs += us;
      continue;
    }
    const p = parts.get(id);
    if (!p) continue;
    add(result.parts, p.part, us);
    if (p.write) add(result.writes, p.part, us);
    if (p.part === 'other') add(result.otherUrls, p.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(bench|server|test)\//, '$1/'), us);
  }
  return result;
}

/** Several processes' breakdowns summed (a configuration whose roles run in more than one). */
export function sumBreakdowns(all: Breakdown[]): Breakdown {
  const out: Breakdown = { parts: new Map(), writes: new Map(), otherUrls: new Map(), wallUs: 0, idleUs: 0 };
  const merge = <K>(into: Map<K, number>, from: Map<K, number>) => {
    for (const [k, v] of from) into.set(k, (into.get(k) ?? 0) + v);
  };
  for (const b of all) {
    merge(out.parts, b.parts);
    merge(out.writes, b.writes);
    merge(out.otherUrls, b.otherUrls);
    out.wallUs += b.wallUs;
    out.idleUs += b.idleUs;
  }
  return out;
}
