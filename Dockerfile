# lawnd container image: Debian 12 (bookworm), built from this repository.
#
#   docker build -t lawn:0.1.0 .                    (or, without Docker: tests/image/build_and_smoke.sh)
#   docker run --rm -p 7070:7070 -p 9464:9464 -v lawn-data:/var/lib/lawn lawn:0.1.0
#
# Stage "build" installs the whole build stack with .ci/install-deps (the same script CI uses) and builds only
# lawnd, lawnctl and lawn_dump. The runtime stage is bookworm-slim with the shared libraries they link against and
# nothing else: no compiler, no headers, no shell tools beyond the base image's.

FROM debian:bookworm AS build
# Parallel compile jobs; the C++ is heavy, so keep it low on small machines.
ARG JOBS=2
WORKDIR /src
# The dependency layer first, so that editing sources does not reinstall the toolchain.
COPY .ci/install-deps .ci/install-deps
RUN .ci/install-deps && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DLAWN_BUILD_TESTS=OFF -DLAWN_BUILD_BENCH=OFF \
 && cmake --build /build -j"${JOBS}" --target lawnd lawnctl lawn_dump \
 && install -d /out \
 && install -m 0755 /build/server/lawnd /build/server/lawn_dump /build/client/lawnctl /out/ \
 && strip --strip-debug /out/lawnd /out/lawn_dump /out/lawnctl
# The container's config: the sample config/lawn.yaml (every key, at its default) with the four settings a
# container needs. Each sed must have hit its line (the grep fails the build if the sample's layout changed),
# and lawnd must accept the result: it runs for 3 s on it (loopback, no disk) and must drain to exit 0 on the
# SIGTERM that ends it; a config error would exit 2 at once.
RUN sed -e 's|^listen: .*|listen: "0.0.0.0:7070"|' \
        -e 's|^metrics_listen: .*|metrics_listen: "0.0.0.0:9464"|' \
        -e 's|^data_dir: .*|data_dir: "/var/lib/lawn"|' \
        -e 's|^log_format: .*|log_format: json|' \
        config/lawn.yaml > /out/lawn.yaml \
 && test "$(grep -c -E '^(listen: "0\.0\.0\.0:7070"|metrics_listen: "0\.0\.0\.0:9464"|data_dir: "/var/lib/lawn"|log_format: json)$' /out/lawn.yaml)" -eq 4 \
 && timeout --preserve-status -s TERM 3 /out/lawnd --config /out/lawn.yaml --listen 127.0.0.1:0 \
        --metrics-listen= --durability memory --log-level warn

FROM debian:bookworm-slim
# Runtime libraries of lawnd and lawnctl (Debian 12 package names; their own dependencies such as libgrpc29,
# libssl3 or libsnappy1v5 come along). Keep in step with .ci/install-deps and shared/design/DEPENDENCIES.md.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libgrpc++1.51 \
        libprotobuf32 \
        librocksdb7.8 \
        libyaml-cpp0.7 \
        libspdlog1.10 \
        libfmt9 \
        libabsl20220623 \
        libprometheus-cpp-core1.0 \
        libprometheus-cpp-pull1.0 \
        libcivetweb1 \
        etcd-server \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 lawn \
 && useradd --uid 10001 --gid lawn --home-dir /var/lib/lawn --no-create-home --shell /usr/sbin/nologin lawn \
 && install -d -o lawn -g lawn -m 0750 /var/lib/lawn \
 && install -d -m 0755 /etc/lawn
COPY --from=build /out/lawnd /out/lawn_dump /out/lawnctl /usr/local/bin/
COPY --from=build /out/lawn.yaml /etc/lawn/lawn.yaml
# Fails the build if a library lawnd or lawnctl needs is missing from the list above.
RUN ! ldd /usr/local/bin/lawnd /usr/local/bin/lawn_dump /usr/local/bin/lawnctl | grep 'not found' \
 && /usr/local/bin/lawnd --help > /dev/null

USER 10001:10001
WORKDIR /var/lib/lawn
# The data dir: mount a persistent volume (one per lawnd; lawnd refuses a dir another process holds).
VOLUME ["/var/lib/lawn"]
# 7070: gRPC (lawn.v1.TimerService, grpc.health.v1.Health, reflection). 9464: Prometheus /metrics.
EXPOSE 7070 9464
# lawnd drains on SIGTERM (health NOT_SERVING, streams end, in-flight calls finish, store synced) within
# shutdown_timeout (10s by default), then exits 0: give it longer than that before a SIGKILL.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/lawnd", "--config", "/etc/lawn/lawn.yaml"]
