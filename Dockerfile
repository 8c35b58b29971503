# The streamdedup processor image (used by docker-compose.yml).
# The first stage builds the release's wheel as `make dist` does; the image installs that wheel.
FROM python:3.13-slim AS wheel

WORKDIR /src
COPY pyproject.toml README.md ./
COPY streamdedup ./streamdedup
COPY topologies ./topologies
RUN pip install --no-cache-dir "build>=1.2" && python -m build --wheel --outdir /dist .

FROM python:3.13-slim

WORKDIR /app
COPY config ./config
# numba, rocksdict and confluent-kafka ship manylinux wheels: no compiler needed.
COPY --from=wheel /dist /dist
# Numba's kernel cache is part of the image, owned by the app user: Numba writes new entries
# there and only uses a cache directory it can write to.
ENV NUMBA_CACHE_DIR=/var/cache/streamdedup/numba
RUN pip install --no-cache-dir /dist/streamdedup-*.whl && rm -rf /dist && \
    useradd --create-home --uid 10001 streamdedup && \
    mkdir -p /state "$NUMBA_CACHE_DIR" && chown streamdedup /state "$NUMBA_CACHE_DIR"
USER streamdedup
# Compile the kernels once here, not for ~10-20 s in every new container. The cache stays valid
# in the containers: Numba keys it by the installed kernel source's directory and its contents
# (Numba 0.68 hashes them; older releases use the file's mtime and size), and the image layers
# keep paths, contents and mtimes as they were at build. It is also keyed by the CPU: on a host
# with another CPU model the kernels compile once more (into that container's layer; `run`
# says so). ENV NUMBA_CPU_NAME=generic before this line would build a cache for any x86-64,
# at some cost in kernel speed (not measured).
RUN streamdedup warm-up --config config/default.yaml
VOLUME ["/state"]
ENTRYPOINT ["streamdedup"]
CMD ["run", "--config", "config/default.yaml", "--state-dir", "/state"]
