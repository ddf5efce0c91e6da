// SnG settings (server/tournaments/settings.ts): every rule of the spec's table, and the resolved
// form (the structure's duration wins; the payout as the wire carries it).
import { ZodError } from 'zod';
import { resolveSngSettings } from '../../server/tournaments/settings.ts';

const structure = { startingSmallBlind: 10, increaseFactor: 1.5, levelDurationSeconds: 120, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 };
const base = { mode: 'sng', seats: 10, entryFee: 100, startingStack: 1500, blindStructure: structure };

const problems = (settings: Record<string, unknown>) => {
  try {
    resolveSngSettings(settings);
  } catch (err) {
    if (err instanceof ZodError) return err.issues.map((i) => i.path.join('.'));
    throw err;
  }
  return [];
};

test('defaults: the parametric payout for the full seat count, kind open, 30 s action timeout, no late registration or rebuys', () => {
  expect(resolveSngSettings(base)).toMatchObject({
    kind: 'open', rakeFee: 0, actionTimeoutSeconds: 30, lateRegistrationSeconds: 0, rebuyConfig: null, levelDurationSeconds: 120,
    prizeStructure: [{ position: 1, percent: 51.35 }, { position: 2, percent: 28.48 }, { position: 3, percent: 20.17 }],
  });
});

test('a blind structure without its ante fields has no antes (they default: no start level, 0, factor 1)', () => {
  const { anteStartLevel: _a, startingAnte: _s, anteIncreaseFactor: _f, ...noAntes } = structure;
  expect(resolveSngSettings({ ...base, blindStructure: noAntes }).blindStructure)
    .toEqual({ ...noAntes, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 });
});

test('the structure is preferred over a legacy list, and its own duration over levelDurationSeconds', () => {
  const r = resolveSngSettings({ ...base, blindLevels: [{ sb: 1, bb: 2 }], levelDurationSeconds: 45 });
  expect(r.levelDurationSeconds).toBe(120);
  expect(resolveSngSettings({ ...base, blindStructure: undefined, blindLevels: [{ sb: 5, bb: 10 }, { sb: 10, bb: 20, ante: 2 }], levelDurationSeconds: 45 }).levelDurationSeconds).toBe(45);
});

test('payout sources: a parametric structure, else a legacy list verbatim, else the defaults', () => {
  expect(resolveSngSettings({ ...base, payoutStructure: { paidPlacesPercent: 50, topHeaviness: 1 } }).prizeStructure).toHaveLength(5);
  expect(resolveSngSettings({ ...base, prizeStructure: [{ position: 2, percent: 35 }, { position: 1, percent: 65 }] }).prizeStructure)
    .toEqual([{ position: 1, percent: 65 }, { position: 2, percent: 35 }]);
});

test.each([
  [{ seats: 1 }, 'seats'], [{ seats: 11 }, 'seats'], [{ entryFee: 0 }, 'entryFee'], [{ entryFee: 1.5 }, 'entryFee'],
  [{ startingStack: 0 }, 'startingStack'], [{ rakeFee: 100 }, 'rakeFee'], [{ actionTimeoutSeconds: 2 }, 'actionTimeoutSeconds'],
  [{ actionTimeoutSeconds: 301 }, 'actionTimeoutSeconds'], [{ lateRegistrationSeconds: 10 }, 'lateRegistrationSeconds'],
  [{ rebuyConfig: {} }, 'rebuyConfig'], [{ mode: 'cash' }, 'mode'], [{ kind: 'bots' }, 'kind'],
  [{ blindStructure: undefined }, 'blindStructure'],
  [{ blindStructure: { ...structure, increaseFactor: 1.005 } }, 'blindStructure.increaseFactor'],
  [{ blindStructure: { ...structure, levelDurationSeconds: 29 } }, 'blindStructure.levelDurationSeconds'],
  [{ blindStructure: { ...structure, anteIncreaseFactor: 0.9 } }, 'blindStructure.anteIncreaseFactor'],
  [{ blindStructure: undefined, blindLevels: [{ sb: 5, bb: 10 }] }, 'levelDurationSeconds'],
  [{ blindStructure: undefined, blindLevels: [{ sb: 10, bb: 20 }, { sb: 5, bb: 10 }], levelDurationSeconds: 60 }, 'blindLevels'],
  [{ blindStructure: undefined, blindLevels: [{ sb: 10, bb: 5 }], levelDurationSeconds: 60 }, 'blindLevels'],
  [{ blindStructure: undefined, blindLevels: [{ sb: 10, bb: 20 }], levelDurationSeconds: 29 }, 'levelDurationSeconds'],
  [{ prizeStructure: [{ position: 1, percent: 60 }, { position: 2, percent: 30 }] }, 'prizeStructure'],
  [{ prizeStructure: [{ position: 1, percent: 60 }, { position: 3, percent: 40 }] }, 'prizeStructure'],
  [{ seats: 2, prizeStructure: [{ position: 1, percent: 50 }, { position: 2, percent: 30 }, { position: 3, percent: 20 }] }, 'prizeStructure'],
  [{ payoutStructure: { minPaidPlaces: 0 } }, 'payoutStructure.minPaidPlaces'],
])('%j is refused at %s', (over, path) => {
  expect(problems({ ...base, ...over })).toContain(path);
});
