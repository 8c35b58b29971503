# The streamdedup processor image (used by docker-compose.yml).
FROM python:3.11-slim

WORKDIR /app
# numba, rocksdict and confluent-kafka ship manylinux wheels: no compiler needed.
COPY pyproject.toml README.md ./
COPY streamdedup ./streamdedup
COPY topologies ./topologies
COPY config ./config
RUN pip install --no-cache-dir . && \
    useradd --create-home --uid 10001 streamdedup && mkdir -p /state && chown streamdedup /state
USER streamdedup
# Numba's on-disk kernel cache lives next to the package; keep it writable for the app user.
ENV NUMBA_CACHE_DIR=/tmp/numba-cache
VOLUME ["/state"]
ENTRYPOINT ["streamdedup"]
CMD ["run", "--config", "config/default.yaml", "--state-dir", "/state"]
