# syntax=docker/dockerfile:1
# Build stage: compile the TypeScript (with source maps), then drop dev dependencies.
FROM node:24.11.1-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

# Runtime stage: production dependencies and compiled code only, owned by root (the bot reads, never writes
# them), so a read-only root filesystem works; the embedded store's DATA_DIR is the one place the bot
# writes (unused with DATABASE_URL).
FROM node:24.11.1-bookworm-slim
ENV PORT=3000 \
    ADMIN_PORT=9090 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown 1000:1000 /data
# The image's `node` user, by number so that Kubernetes' runAsNonRoot can check it.
USER 1000:1000
# A new named volume starts with this directory's owner (1000); a bind-mounted host directory does not.
VOLUME ["/data"]
# PORT: Slack's requests (HTTP mode), /healthz, /readyz. ADMIN_PORT: /metrics, /healthz, /readyz.
EXPOSE 3000 9090
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.ADMIN_PORT || 9090) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node's defaults otherwise; tune with NODE_OPTIONS. Source maps: stack traces name the TypeScript lines.
CMD ["node", "--enable-source-maps", "dist/src/main.js"]
