/**
 * What this build is: the package's version (package.json, read once at start: the same file
 * beside src/ and dist/) and the Node.js running it. `waygate --version` and the
 * waygate_build_info metric show it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_JSON = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../package.json');

export const VERSION: string = (JSON.parse(fs.readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;
export const NODE_VERSION: string = process.versions.node;
