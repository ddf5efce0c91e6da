// The dealer benchmark. For now one comparison: seven-card hands/s of the evaluator's score path
// (server/game/poker/evaluator.ts, scoreSeven) against the `phe` package's seven-card evaluator, on
// the same pre-generated random hands, in one process and one run. As everywhere in bench/, cases
// are interleaved (every round runs every case for a fixed time, in a rotated order), rates are
// medians over rounds and ratios are taken within a round, then their median is quoted.
//
// The cases and the goals are lists so that the engine (hands dealt to showdown per second) and the
// live table (actions per second over the wire) can be added beside the evaluator's by appending a
// case, its baseline case and a goal: the rounds, the medians and the report need no change.
import { cpus } from 'node:os';
import { scoreSeven } from '../server/game/poker/evaluator.ts';
import { loadPhe, randomHands } from '../test/helpers/evaluator.ts';
import { fmtRate, fmtRatio, median, numericFlags, table, timed, UsageError } from './lib/harness.ts';

const USAGE = `usage: npm run bench -- dealer [--seconds N] [--rounds N] [--hands N]
  --seconds  measured seconds per case per round (default 2)
  --rounds   interleaved rounds; medians are taken over them (default 5)
  --hands    pre-generated random seven-card hands, shared by the evaluator cases (default 1048576)`;

const SEED = 20240601;

interface Case {
  name: string;
  /** What a unit is, for the report. */
  unit: string;
  /** One batch of work; returns the units it completed. */
  batch: () => number | Promise<number>;
}

interface Goal {
  label: string;
  /** The case measured; with `baseline`, the goal is the within-round ratio, else the rate. */
  subject: string;
  baseline?: string;
  target: number;
}

const EVALUATOR = 'evaluator 7-card hands/s (ours, score path)';
const PHE = 'phe 7-card hands/s';

export default async function dealerBench(args: string[]): Promise<number> {
  let flags;
  try {
    flags = numericFlags(args, { seconds: 2, rounds: 5, hands: 1 << 20 }, USAGE);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
  const rounds = Math.max(1, Math.round(flags.rounds));
  const count = Math.max(1, Math.round(flags.hands));
  const began = performance.now();

  const hands = randomHands(count, SEED);
  const evaluate7 = loadPhe().evaluate7;
  // two loops, not one taking a function: each call site stays monomorphic and inlinable
  const ours = () => {
    let sum = 0;
    for (let i = 0; i < hands.length; i += 7) {
      sum += scoreSeven(hands[i]!, hands[i + 1]!, hands[i + 2]!, hands[i + 3]!, hands[i + 4]!, hands[i + 5]!, hands[i + 6]!);
    }
    return sum;
  };
  const theirs = () => {
    let sum = 0;
    for (let i = 0; i < hands.length; i += 7) {
      sum += evaluate7(hands[i]!, hands[i + 1]!, hands[i + 2]!, hands[i + 3]!, hands[i + 4]!, hands[i + 5]!, hands[i + 6]!);
    }
    return sum;
  };
  // The same hands and the same answers: our scores are 7,463 minus phe's values, hand for hand.
  // The sums also keep the loops' results alive, so no work is optimised away.
  let ourSum = ours();
  let theirSum = theirs();
  if (ourSum + theirSum !== 7463 * count) {
    console.error(`the evaluators disagree on these hands: sums ${ourSum} + ${theirSum} != 7463 x ${count}`);
    return 1;
  }

  const cases: Case[] = [
    {
      name: EVALUATOR, unit: 'hands',
      batch: () => {
        ourSum = ours();
        return count;
      },
    },
    {
      name: PHE, unit: 'hands',
      batch: () => {
        theirSum = theirs();
        return count;
      },
    },
  ];
  const goals: Goal[] = [
    { label: EVALUATOR, subject: EVALUATOR, target: 10_000_000 },
    { label: 'evaluator vs phe, same hands', subject: EVALUATOR, baseline: PHE, target: 1.0 },
  ];

  console.log(`dealer benchmark: node ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'} (${cpus().length} CPUs, one used)`);
  console.log(`${fmtRate(count)} random seven-card hands (seed ${SEED}), pre-generated and shared by the evaluator cases`);
  console.log(`${rounds} rounds x ${cases.length} cases x ${flags.seconds} s, order rotated each round\n`);

  const results = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  const runRound = async (round: number, seconds: number, record: boolean) => {
    const line: string[] = [];
    for (const c of cases.map((_, i) => cases[(i + round) % cases.length]!)) {
      const r = await timed(1, seconds, async () => c.batch());
      if (record) results.get(c.name)!.push(r.perSecond);
      line.push(`${c.name} ${fmtRate(r.perSecond)}`);
    }
    console.log(`${record ? `round ${round + 1}/${rounds}` : 'warm-up'}: ${line.join(', ')}`);
  };
  await runRound(0, Math.min(1, flags.seconds), false);
  for (let r = 0; r < rounds; r++) await runRound(r, flags.seconds, true);
  if (ourSum + theirSum !== 7463 * count) throw new Error('the evaluators changed their answers during the run');

  const rates = (name: string) => results.get(name) ?? [];
  /** Median over rounds of the within-round ratio. */
  const ratio = (a: string, b: string) => median(rates(a).map((v, i) => v / rates(b)[i]!));

  console.log('\nmedian rates over rounds');
  console.log(table(
    ['case', 'unit', 'median/s', 'min/s', 'max/s'],
    cases.map((c) => [c.name, c.unit, fmtRate(median(rates(c.name))), fmtRate(Math.min(...rates(c.name))), fmtRate(Math.max(...rates(c.name)))]),
  ));
  console.log(`\nevaluator vs phe on the same hands: ${fmtRatio(ratio(EVALUATOR, PHE))} (median of within-round ratios)`);

  console.log(`\nfinal: medians over ${rounds} rounds and the median of the within-round ratios`);
  console.log(table(
    ['goal', 'median/s', 'baseline/s', 'ratio', 'target', 'result'],
    goals.map((g) => {
      const value = g.baseline ? ratio(g.subject, g.baseline) : median(rates(g.subject));
      return [
        g.label, fmtRate(median(rates(g.subject))), g.baseline ? fmtRate(median(rates(g.baseline))) : '-',
        g.baseline ? fmtRatio(value) : '-', g.baseline ? `>= ${fmtRatio(g.target)}` : `>= ${fmtRate(g.target)}/s`,
        value >= g.target ? 'PASS' : 'MISS',
      ];
    }),
  ));
  console.log(`total ${((performance.now() - began) / 1000).toFixed(0)} s`);
  return 0;
}
