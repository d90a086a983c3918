# The image of `--launcher kube`'s workers: a static ink, git and bash, run
# as a non-root user. The pod runs `ink worker --remote --listen :7777`
# (launcher/kube sets the arguments); its root filesystem is read-only and
# every path the worker writes is an emptyDir. The worker needs no
# Kubernetes client, so this builds ink without the kube tag.
#
#   docker build --build-arg VERSION=v1.2.3 -t ghcr.io/inkdev/ink:v1.2.3 .
#   docker push ghcr.io/inkdev/ink:v1.2.3
#
# The tag must be the supervisor's ink version: a worker of another version
# is refused when it greets. VERSION stamps the binary with it (a build from
# a checkout otherwise reports "(devel)", which only a supervisor built the
# same way accepts).
FROM golang:1.26-bookworm AS build
ARG VERSION=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ink ./cmd/ink

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends git bash ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 1000 ink \
 && useradd --uid 1000 --gid 1000 --home-dir /home/ink --create-home --shell /bin/bash ink
COPY --from=build /out/ink /usr/local/bin/ink
USER 1000:1000
WORKDIR /home/ink
EXPOSE 7777
ENTRYPOINT ["/usr/local/bin/ink"]
CMD ["worker", "--remote", "--listen", ":7777"]
