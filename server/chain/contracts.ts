// The compiled contracts (contracts/artifacts/*.json, built by `npm run build:contracts` and checked
// in): their ABIs and creation bytecode, and the table key every vault call takes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { keccak256, stringToBytes, type Abi, type Hex } from 'viem';

const ARTIFACTS = path.resolve(import.meta.dirname, '../../contracts/artifacts');

export interface Artifact {
  contractName: string;
  abi: Abi;
  bytecode: Hex;
}

function load(name: string): Artifact {
  const artifact = JSON.parse(readFileSync(path.join(ARTIFACTS, `${name}.json`), 'utf8')) as Artifact;
  if (artifact.contractName !== name || !artifact.bytecode.startsWith('0x') || !Array.isArray(artifact.abi)) {
    throw new Error(`contracts/artifacts/${name}.json is not a ${name} artefact (npm run build:contracts)`);
  }
  return artifact;
}

export const CHIP_TOKEN = load('ChipToken');
export const TABLE_VAULT = load('TableVault');

/** The vault's ABI plus the token's errors: a vault call bubbles up the token's permit and transfer reverts. */
export const VAULT_CALL_ABI: Abi = [...TABLE_VAULT.abi, ...CHIP_TOKEN.abi.filter((item) => item.type === 'error')];

/** keccak256 of the table id's UTF-8 bytes: computed at each call, never stored off chain. */
export function tableKey(tableId: string): Hex {
  return keccak256(stringToBytes(tableId));
}
