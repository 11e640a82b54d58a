/**
 * The container files as a reviewer would check them without a container engine: compose.yaml's
 * services (PostgreSQL with a volume, an api and a worker that scales) and the Dockerfile's
 * stages (a runtime of production dependencies and the built output, non-root, a healthcheck,
 * DATA_DIR on a volume).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseDocument } from 'yaml';
import { ROOT } from './cli-process.js';

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  ports?: string[];
  container_name?: string;
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
}

/** compose.yaml with its anchors and merge keys resolved, as `docker compose config` would. */
function compose(): { services: Record<string, Service>; volumes: Record<string, unknown> } {
  const text = fs.readFileSync(path.join(ROOT, 'compose.yaml'), 'utf8');
  const document = parseDocument(text, { merge: true });
  expect(document.errors).toEqual([]);
  return parse(text, { merge: true }) as ReturnType<typeof compose>;
}

describe('compose.yaml', () => {
  it('runs PostgreSQL on a named volume with a healthcheck', () => {
    const { services, volumes } = compose();
    const postgres = services.postgres!;
    expect(postgres.image).toMatch(/^postgres:\d+/);
    const [volume, mount] = postgres.volumes![0]!.split(':');
    expect(mount).toBe('/var/lib/postgresql/data');
    expect(Object.keys(volumes)).toContain(volume);
    expect(postgres.healthcheck?.test.join(' ')).toContain('pg_isready');
  });

  it('runs the api and the worker roles of the same image against that database', () => {
    const { services } = compose();
    for (const [name, role] of [['api', 'api'], ['worker', 'worker']] as const) {
      const service = services[name]!;
      expect(service.build).toBe('.');
      expect(service.command).toEqual(['serve', '--role', role]);
      expect(service.environment?.DATABASE_URL).toMatch(/^postgres:\/\/waygate:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432\/waygate$/);
      expect(service.depends_on?.postgres?.condition).toBe('service_healthy');
    }
    expect(services.api!.ports).toEqual(['${WAYGATE_PORT:-3000}:3000']);
    // The image's healthcheck asks WORKER_PORT on a worker (it listens nowhere else).
    expect(services.worker!.environment?.WORKER_PORT).toBe('3000');
  });

  it('lets `--scale worker=3` run: no fixed name and no host port on the worker', () => {
    const { services } = compose();
    expect(services.worker!.container_name).toBeUndefined();
    expect(services.worker!.ports).toBeUndefined();
  });
});

describe('Dockerfile', () => {
  const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));

  it('builds in one stage and runs production dependencies and the built output in another', () => {
    expect(dockerfile).toMatch(/^FROM \S+ AS build$/m);
    expect(dockerfile.slice(0, dockerfile.indexOf('AS runtime'))).toContain('RUN npm run build');
    expect(runtime).toContain('npm ci --omit=dev');
    expect(runtime).toContain('COPY --from=build /app/dist ./dist');
    expect(runtime).toContain('COPY --from=build /app/dashboard/dist ./dashboard/dist');
    expect(runtime).toContain('COPY drizzle ./drizzle');
    expect(runtime).toMatch(/ENTRYPOINT \["node", "dist\/cli.js"\]/);
  });

  it('runs as a non-root user with DATA_DIR on a volume, port 3000 and a healthcheck on /healthz', () => {
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).toMatch(/DATA_DIR=\/data/);
    expect(runtime).toMatch(/^VOLUME \["\/data"\]$/m);
    expect(runtime).toMatch(/^EXPOSE 3000$/m);
    expect(runtime).toMatch(/^HEALTHCHECK .*\n.*\/healthz/m);
  });

  it('leaves out of the build context what the image must not contain', () => {
    const ignored = fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n');
    for (const entry of ['node_modules', 'dist', 'data', '.env', '.git']) expect(ignored).toContain(entry);
  });
});
