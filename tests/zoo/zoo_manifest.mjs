// The zoo that export_zoo.py wrote (AUTOPAR_ZOO_DIR/zoo.json), shared by the
// zoo's tests: the models to run (ZOO_MODELS=a,b narrows them) and why the
// tests skip when the executable or the zoo is missing.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI } from '../e2e/helpers.mjs';

export const ZOO_DIR = process.env.AUTOPAR_ZOO_DIR;
export const manifestPath = ZOO_DIR && join(ZOO_DIR, 'zoo.json');
export const missing = !CLI ? 'AUTOPAR_CLI not set (run through ctest)'
  : !ZOO_DIR ? 'AUTOPAR_ZOO_DIR not set'
    : !existsSync(manifestPath) ? `${manifestPath} missing: the export_zoo fixture should have written it` : false;
export const manifest = missing ? { models: [] } : JSON.parse(readFileSync(manifestPath, 'utf8'));
const only = process.env.ZOO_MODELS?.split(',');
export const models = manifest.models.filter((m) => !only || only.includes(m.name));
