# The GitHub App's image: the app bundled into one file (dist/app.mjs, no node_modules) on
# Node 22, with git for the local backend. The working directory /data holds .env (the
# App's id, key and webhook secret, written by the setup page): keep it on a volume.
#
#   docker build -f docker/app.Dockerfile -t ghcr.io/YOUR_ORG/evokernel-app:v0.1.0 .
#   docker run -d --name evokernel -p 3000:3000 -v evokernel-data:/data \
#     -e GH_ORG=YOUR_ORG -e EVOKERNEL_PUBLIC_URL=https://evokernel.example.com \
#     ghcr.io/YOUR_ORG/evokernel-app:v0.1.0
#
# First start: the setup page on port 3000 (docs/INSTALL.md, step 2), after which the App
# runs with the credentials it wrote to /data/.env. Or pass APP_ID, PRIVATE_KEY and
# WEBHOOK_SECRET as environment variables (a secret store) and skip the page.
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS bundle
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run bundle

FROM ${NODE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=bundle /src/dist/app.mjs /app/dist/app.mjs
COPY app.yml /app/app.yml
RUN mkdir /data && chown node:node /data
USER node
WORKDIR /data
VOLUME /data
# Probot listens on localhost unless told; json logs in production.
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000
EXPOSE 3000
CMD ["node", "/app/dist/app.mjs"]
