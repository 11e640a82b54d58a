# Waygate: a two-stage image. The build stage installs every dependency and builds the server
# (dist/) and the dashboard (dashboard/dist/); the runtime stage holds only the production
# dependencies and that output, and runs as the unprivileged `node` user.
#
#   docker build -t waygate .
#   docker run -p 3000:3000 -v waygate-data:/data waygate            # embedded database in /data
#   docker compose up --scale worker=3                                # PostgreSQL, api and workers (compose.yaml)

ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the build runs below, once the sources are here (prepare would run it now).
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY . .
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data \
    LOG_FORMAT=json
WORKDIR /app
COPY package.json package-lock.json ./
# The dependencies' install scripts only check the Node version and print notes; skipping them
# (and this package's prepare, which builds from sources the image does not hold) changes nothing.
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY --from=build /app/dashboard/dist ./dashboard/dist
COPY drizzle ./drizzle
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# /healthz of this process, on PORT or on WORKER_PORT (where `serve --role worker` listens).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "const ports = [process.env.PORT, process.env.WORKER_PORT].filter(Boolean); Promise.any(ports.map((port) => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => { if (!r.ok) throw new Error(String(r.status)); }))).then(() => process.exit(0), () => process.exit(1))"]
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["serve"]
