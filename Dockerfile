# Worker image: `docker compose up --scale worker=N` runs N of these.
# The Node major follows package.json "engines" (test/unit/compose-file.test.ts checks it).
FROM node:20-bookworm-slim
# Chromium for `render: browser|auto` (docs/rendering.md, "Which Chromium"): the worker runs as an unprivileged
# user and cannot install it itself; its headless shell is the one found first.
RUN apt-get update && apt-get install -y --no-install-recommends chromium-headless-shell && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=dev keeps what the image needs: tsx, esbuild (tsx's dependency, which builds the worker
# bundle) and @swc/core, which bundles the workflows and comes in as a dependency of
# @temporalio/worker (package.json also lists esbuild and @swc/core under devDependencies).
# jest, @swc/jest and typescript are left out.
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
ENV NODE_ENV=production
COPY scripts/worker-bundle.cjs ./scripts/
# Pre-build the workflow bundle so each replica starts in seconds, and the worker bundle the
# replicas run with plain node (no TypeScript loader: less memory per worker).
RUN node_modules/.bin/tsx -e "require('./src/worker/workflow-bundle').ensureWorkflowBundle().then(p => console.log(p))"
RUN node scripts/worker-bundle.cjs --out dist/worker.cjs
# Campaign output folders: a named volume mounted here starts out owned by the worker user.
RUN mkdir -p /crawl-output && chown node:node /crawl-output
# The base image's unprivileged user; code and bundle stay root-owned, read-only to it.
USER node
STOPSIGNAL SIGTERM
# `crawler worker` as one node process (no launcher in front), so SIGTERM reaches the
# worker itself and it drains in-flight steps before exiting.
# With the worker's memory defaults (scripts/worker-bundle.cjs: DEFAULT_WORKER_NODE_ARGS, DEFAULT_WORKER_ENV).
ENV MALLOC_ARENA_MAX=2
ENV MALLOC_MMAP_THRESHOLD_=131072
CMD ["node", "--max-semi-space-size=2", "--heap-growing-percent=30", "dist/worker.cjs"]
