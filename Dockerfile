# syntax=docker/dockerfile:1
# The connector service image: `serve` by default; `migrate`, `tenants create` and
# `users create` run from the same image (INTERFACE §1). `dev` is not for containers:
# production points DATABASE_URL and NATS_URL at real servers.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
# `build` compiles and copies the SQL migrations next to the compiled migrate module.
RUN npm run build

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=optional leaves out the embedded Postgres binaries (tens of MB), used by `dev` only.
RUN npm ci --omit=dev --omit=optional && npm cache clean --force

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root package.json ./
COPY --chown=root:root bin ./bin
# The code is owned by root and read-only to the process, which runs as the image's
# unprivileged `node` user (uid 1000).
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "bin/connectors.js"]
CMD ["serve"]
