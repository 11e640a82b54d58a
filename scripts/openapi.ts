/**
 * `npm run openapi:dump [-- FILE]`: writes the OpenAPI document the server publishes at
 * /openapi.json (default FILE: openapi.json) without opening a network listener. The app is
 * built on an in-memory PGlite with the default configuration (sandbox network, PUBLIC_URL
 * http://localhost:3000), so the document is the same on every machine whatever the environment.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/platform/database.js';

/** The document as GET /openapi.json answers it under the default configuration. */
export async function buildOpenApiDocument(): Promise<Record<string, unknown>> {
  const database = await openDatabase({ dataDir: 'memory://' });
  const app = await buildApp({ config: loadConfig({ LOG_LEVEL: 'silent' }), database });
  try {
    await app.ready();
    // The object GET /openapi.json answers, as JSON (a round trip drops what JSON cannot hold).
    return JSON.parse(JSON.stringify(app.swagger())) as Record<string, unknown>;
  } finally {
    await app.close();
    await database.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const target = path.resolve(process.argv[2] ?? 'openapi.json');
  const document = await buildOpenApiDocument();
  fs.writeFileSync(target, `${JSON.stringify(document, null, 2)}\n`);
  console.log(`${path.relative(process.cwd(), target)}: ${Buffer.byteLength(JSON.stringify(document))} bytes`);
}
