#!/usr/bin/env bash
# Installs what dumpsift needs on Debian 12 (bookworm), with apt-get (through sudo when not root).
# Idempotent: what is installed is left as it is.
#   scripts/setup.sh          what building and running the tool needs: a compiler, CMake, Ninja,
#                             pkg-config, LLVM's libraries, CLI11, nlohmann-json, libjpeg-turbo,
#                             zlib, and xz for the bundled core (README command 1)
#   scripts/setup.sh --tests  that, and the test toolchain: Catch2, gdb, the allocators, runtimes
#                             and browser the tests run, the .NET Core runtime and the AMQP
#                             client's npm packages (README command 2, .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

tests=false
case "${1-}" in
  "") ;;
  --tests) tests=true ;;
  *)
    echo "usage: scripts/setup.sh [--tests]" >&2
    exit 2
    ;;
esac

packages=(
  g++ cmake ninja-build pkg-config
  llvm-dev libcli11-dev nlohmann-json3-dev libturbojpeg0-dev zlib1g-dev libsqlite3-dev
  xz-utils              # the bundled core, fixtures/cores/story.core.xz
)
if $tests; then
  packages+=(
    catch2                # the test framework (Catch2 v2)
    ccache                # rebuilds and CI's next clean clone compile only what changed
    gdb                   # tests dump live fixture processes with gcore
    libjemalloc2 libjemalloc-dev  # the jemalloc walker's ground truth: preloaded, and linked in
    musl-tools            # musl-gcc: the musl mallocng walker's fixture programs
    clang-format-14       # CI checks formatting
    clang-14 libclang-rt-14-dev  # CI's ASan+UBSan build is compiled with clang (its -Wdangling warnings)
    clang-tidy-14         # CI's check for references into temporaries (bugprone-dangling-handle, ...)
    libjpeg-turbo-progs   # cjpeg/djpeg: tests check extracted JPEGs with a real decoder
    python3 python3-jsonschema  # tests validate every report against docs/report.schema.json
    chromium              # the HTML report's tests load it in headless Chromium
    libmimalloc2.0        # the mimalloc walker's tests run fixture programs with it preloaded
    # gperftools 2.10: tcmalloc preloaded (minimal and full) and linked in, for the tcmalloc walker
    libtcmalloc-minimal4 libgoogle-perftools4 libgoogle-perftools-dev
    openjdk-17-jdk-headless     # the hotspot walker's tests: java, javac and jhsdb (the oracle)
    golang-go             # the go walker's tests build fixtures/go/ with Debian's Go (1.19)
    wine64 gcc-mingw-w64-x86-64-win32  # tests build a Windows program that minidumps itself (Wine)
    rabbitmq-server       # the broker of the real AMQP client's test (amqplib, fixtures/amqp/)
    slurmctld slurmd slurm-client munge  # the fleet's test on a localhost Slurm cluster (tests/fleet/)
    sqlite3               # the fleet tests query the fleet database as docs/fleet.md does
  )
  # node and npm for that client: Debian's, unless a node that brings its own npm is installed.
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
  if [ -f fixtures/dotnet/packages.txt ]; then
    mapfile -t extra < <(grep -v '^#' fixtures/dotnet/packages.txt | grep -v '^$')
    packages+=("${extra[@]}")
  fi
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup.sh: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  # --force-unsafe-io: dpkg does not sync each file it unpacks (what a crash in the middle could
  # lose is a package to install again); it halves the time the packages take to install.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-unsafe-io "${missing[@]}" >/dev/null
fi

if ! $tests; then
  exit 0
fi

# Managed-runtime fixtures (.NET Core 2.0 from the npm registry, Mono from Debian), if present.
if [ -x fixtures/dotnet/setup.sh ]; then
  fixtures/dotnet/setup.sh
fi

# The AMQP client's library, from fixtures/amqp/package-lock.json (npm's registry, on first run).
if [ ! -f fixtures/amqp/node_modules/amqplib/package.json ]; then
  (cd fixtures/amqp && npm ci --silent --no-audit --no-fund)
fi

# The Kubernetes schema's models that validate docs/fleet.md's Job, from
# fixtures/kubernetes/package-lock.json (npm's registry, on first run).
if [ ! -f fixtures/kubernetes/node_modules/kubernetes-models/package.json ]; then
  (cd fixtures/kubernetes && npm ci --silent --no-audit --no-fund)
fi
