#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for ksandwich, idempotently: installs the Debian
# packages that build and run the harness, then configures and builds into build/: the CLI
# and the agent; `--tests` also installs what only the tests need and builds the test
# programs (the README's test command uses it).
# Run as root from the repository. Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

tests=false
case "${1:-}" in
  "") ;;
  --tests) tests=true ;;
  *) echo "usage: tools/setup.sh [--tests]" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
  echo "tools/setup.sh: run as root (it installs Debian packages)" >&2
  exit 2
fi

packages=(
  # build the harness, its man pages and its Debian package (cpack -G DEB)
  build-essential cmake pkg-config git help2man dpkg-dev
  liburing-dev nlohmann-json3-dev libcli11-dev libfmt-dev catch2 libssl-dev zlib1g-dev
  # run workloads and make filesystems
  btrfs-progs fio util-linux e2fsprogs kmod
  # build kernels (linux-source-6.1 is the embedded default source)
  linux-source-6.1 bc bison flex libelf-dev cpio xz-utils lz4 ccache rsync patch
  # confine make, which runs the patch's own Makefiles, when building as root
  bubblewrap
  # boot them
  qemu-system-x86 busybox-static
  # check bundles against their schema (validate, report)
  python3 python3-jsonschema
  # the history store of nightly runs
  libsqlite3-dev
)
if $tests; then
  packages+=(
    # the HTML report in a real browser; the .deb installed into a debootstrapped root;
    # the completion tried with bash-completion; jq reads the JSON outputs; python3-yaml
    # reads the CI job file
    chromium debootstrap bash-completion jq python3-yaml
    # a single-node Slurm cluster on localhost for `submit --slurm` and `gather`
    # (tests/integration/test_slurm_submit.sh starts and stops its own daemons)
    slurm-wlm munge
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "tools/setup.sh: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Kernel builds share one ccache outside the repository, kept between runs.
mkdir -p /var/cache/ksandwich/ccache

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if $tests; then
  cmake --build build -j"$(nproc)"
  echo "tools/setup.sh: ready (build/bin/ksandwich, build/bin/ksandwich-agent and the tests)"
else
  # The main job needs the CLI and the agent, not the test programs (minutes of compiling).
  cmake --build build -j"$(nproc)" --target ksandwich ksandwich-agent
  echo "tools/setup.sh: ready (build/bin/ksandwich, build/bin/ksandwich-agent)"
fi
