// Compiles contracts/*.sol with solc-js (npm `solc`, no network compiler download) and writes
// contracts/artifacts/<Contract>.json (abi + creation bytecode). The artefacts are checked in, so a
// fresh clone deploys without compiling; test/chain/chain-artifacts.test.ts compiles again and requires the
// checked-in files to be identical (they cannot drift from the sources).
//   npm run build:contracts
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ARTIFACTS_DIR = path.join(ROOT, 'contracts/artifacts');

/** The deployable contracts: source file under contracts/ and contract name. */
export const CONTRACTS = [
  { file: 'ChipToken.sol', name: 'ChipToken' },
  { file: 'TableVault.sol', name: 'TableVault' },
] as const;

interface Solc {
  compile(input: string, callbacks: { import(p: string): { contents: string } | { error: string } }): string;
  version(): string;
}

/** An import as solc names it: `@openzeppelin/...` from node_modules, anything else refused. */
function findImport(importPath: string): { contents: string } | { error: string } {
  if (!importPath.startsWith('@openzeppelin/contracts/') || importPath.includes('..')) return { error: `import not allowed: ${importPath}` };
  try {
    return { contents: readFileSync(path.join(ROOT, 'node_modules', importPath), 'utf8') };
  } catch {
    return { error: `not found: ${importPath}` };
  }
}

/** Every contract's artefact as the JSON text written to contracts/artifacts/<name>.json. */
export function compileContracts(): Map<string, string> {
  const solc = require('solc') as Solc;
  const sources = Object.fromEntries(CONTRACTS.map((c) => [`contracts/${c.file}`, { content: readFileSync(path.join(ROOT, 'contracts', c.file), 'utf8') }]));
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      evmVersion: 'cancun',
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport }));
  const errors = (out.errors ?? []).filter((e: { severity: string }) => e.severity === 'error');
  if (errors.length) throw new Error(`solc: ${errors.map((e: { formattedMessage: string }) => e.formattedMessage).join('\n')}`);
  const artifacts = new Map<string, string>();
  for (const c of CONTRACTS) {
    const compiled = out.contracts[`contracts/${c.file}`][c.name];
    const artifact = {
      contractName: c.name,
      sourceName: `contracts/${c.file}`,
      compiler: `solc-js ${solc.version()}`,
      abi: compiled.abi,
      bytecode: `0x${compiled.evm.bytecode.object}`,
    };
    artifacts.set(c.name, `${JSON.stringify(artifact, null, 2)}\n`);
  }
  return artifacts;
}

function main(): void {
  for (const [name, text] of compileContracts()) {
    writeFileSync(path.join(ARTIFACTS_DIR, `${name}.json`), text);
    process.stdout.write(`wrote contracts/artifacts/${name}.json\n`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) main();
