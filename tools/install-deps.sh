#!/usr/bin/env bash
# Installs what zipnet needs to build and test, by Debian package name. Idempotent: it only calls
# apt-get when something is missing. CUDA is optional (nvcc in /usr/local/cuda/bin is used when there).
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config python3 git
      catch2 libxxhash-dev nlohmann-json3-dev libcli11-dev libfmt-dev
      libibverbs-dev rdma-core libisal-dev
      clang libclang-rt-14-dev valgrind iproute2)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
