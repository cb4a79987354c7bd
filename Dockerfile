# Worker image: `docker compose up --scale worker=N` runs N of these.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
ENV NODE_ENV=production
# Pre-build the workflow bundle so each replica starts in seconds.
RUN node_modules/.bin/tsx -e "require('./src/worker/workflow-bundle').ensureWorkflowBundle().then(p => console.log(p))"
STOPSIGNAL SIGTERM
CMD ["node_modules/.bin/tsx", "src/cli/main.ts", "worker"]
