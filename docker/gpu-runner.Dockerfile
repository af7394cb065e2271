# The GPU runner's image: GitHub's Actions runner on CUDA's devel image (nvcc), with
# PyTorch, ninja and Node.js, and evokernel's bundled CLI as `evokernel` for the
# post-install check (`evokernel selftest`). Jobs themselves run the Action from the
# release their workflow names; this copy only checks the machine. Build from a checkout
# of the release (the bundle is built here, in the first stage):
#
#   docker build -f docker/gpu-runner.Dockerfile -t ghcr.io/YOUR_ORG/evokernel-gpu-runner:v0.1.0 .
#   docker run --rm --gpus all ghcr.io/YOUR_ORG/evokernel-gpu-runner:v0.1.0 evokernel selftest
#
# Versions are build arguments: CUDA's image and PyTorch's wheel index must agree (cu128
# wheels with a CUDA 12.8 toolkit), and the driver on the host must be as new as both.
ARG NODE_IMAGE=node:22-bookworm-slim
ARG RUNNER_IMAGE=ghcr.io/actions/actions-runner:latest
ARG CUDA_IMAGE=nvidia/cuda:12.8.1-devel-ubuntu24.04

FROM ${NODE_IMAGE} AS bundle
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run bundle

FROM ${NODE_IMAGE} AS node
FROM ${RUNNER_IMAGE} AS actions-runner

FROM ${CUDA_IMAGE}
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128
ARG TORCH_VERSION=
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      python3 python3-venv python3-dev git ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*

# Node.js for the Action's bundle: the Action finds it on PATH and skips setup-node.
COPY --from=node /usr/local/bin/node /usr/local/bin/node

# PyTorch (CUDA wheels), ninja for torch-extension candidates, numpy for the harness.
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --index-url "${TORCH_INDEX_URL}" \
      "torch${TORCH_VERSION:+==${TORCH_VERSION}}" \
 && /opt/venv/bin/pip install --no-cache-dir ninja numpy
ENV PATH=/opt/venv/bin:/usr/local/cuda/bin:${PATH} \
    EVOKERNEL_PYTHON=/opt/venv/bin/python

# GitHub's runner, as its own image ships it (ARC starts /home/runner/run.sh), with the
# libraries it needs on this base.
RUN useradd --create-home --uid 1001 runner
COPY --from=actions-runner --chown=runner:runner /home/runner /home/runner
RUN apt-get update \
 && /home/runner/bin/installdependencies.sh \
 && rm -rf /var/lib/apt/lists/*

# evokernel's CLI for `evokernel selftest` / `evokernel device`: the bundle beside the
# harness and the corpus it finds from its own path.
COPY --from=bundle /src/dist/evokernel.mjs /opt/evokernel/dist/evokernel.mjs
COPY package.json /opt/evokernel/package.json
COPY runner/harness /opt/evokernel/runner/harness
COPY runner/corpus /opt/evokernel/runner/corpus
COPY kernels /opt/evokernel/kernels
RUN printf '#!/bin/sh\nexec node /opt/evokernel/dist/evokernel.mjs "$@"\n' > /usr/local/bin/evokernel \
 && chmod 755 /usr/local/bin/evokernel

USER runner
WORKDIR /home/runner
# Builds are cached per content hash; a volume here may be shared by one repository's runs.
ENV EVOKERNEL_CACHE=/home/runner/.cache/evokernel
CMD ["/home/runner/run.sh"]
