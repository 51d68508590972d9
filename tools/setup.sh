#!/usr/bin/env bash
# Installs what kforge needs on a Debian machine, and nothing that is already there:
# a C toolchain, CMake, libyaml, jansson, libcurl, libcrypto, and a Python that imports
# torch (Debian's python3-torch where no such Python exists; GPU hosts bring their own)
# plus ninja, which torch.utils.cpp_extension builds with.
set -euo pipefail

need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
have_pc() { pkg-config --exists "$1" 2>/dev/null; }

command -v cc >/dev/null && command -v c++ >/dev/null || need+=(build-essential)
command -v cmake >/dev/null || need+=(cmake)
command -v pkg-config >/dev/null || need+=(pkg-config)
have_pc yaml-0.1 || need+=(libyaml-dev)
have_pc jansson || need+=(libjansson-dev)
have_pc libcurl || need+=(libcurl4-openssl-dev)
have_pc libcrypto || need+=(libssl-dev)
command -v ninja >/dev/null || need+=(ninja-build)
command -v python3 >/dev/null || need+=(python3)

torch_python=""
for py in "${KFORGE_PYTHON:-}" /usr/bin/python3 /usr/local/bin/python3 "$(command -v python3 || true)"; do
  [ -n "$py" ] && [ -x "$py" ] || continue
  if "$py" -c "import torch" >/dev/null 2>&1; then torch_python=$py; break; fi
done
[ -n "$torch_python" ] || need+=(python3-torch python3-dev)

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q >/dev/null
  $sudo apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
else
  echo "setup: everything is installed (Python with torch: $torch_python)"
fi
