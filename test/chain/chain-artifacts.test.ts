// The checked-in contract artefacts are exactly what the sources compile to (npm run build:contracts):
// a change to contracts/*.sol without rebuilding, or a hand-edited artefact, fails here.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ARTIFACTS_DIR, CONTRACTS, compileContracts } from '../../scripts/build-contracts.ts';

test('contracts/artifacts/*.json equal a fresh solc-js compile of contracts/*.sol', () => {
  const compiled = compileContracts();
  expect([...compiled.keys()].sort()).toEqual(CONTRACTS.map((c) => c.name).sort());
  for (const [name, text] of compiled) {
    const checkedIn = readFileSync(path.join(ARTIFACTS_DIR, `${name}.json`), 'utf8');
    expect({ name, same: checkedIn === text }).toEqual({ name, same: true });
    const artifact = JSON.parse(text) as { bytecode: string; abi: unknown[] };
    expect(artifact.bytecode.length).toBeGreaterThan(1000);
  }
});
