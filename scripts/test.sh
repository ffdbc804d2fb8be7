#!/usr/bin/env bash
# The test command: runs the whole workspace's tests on a real wgpu adapter.
# Installs Mesa's software Vulkan driver (llvmpipe) when no Vulkan driver is present
# (Debian/Ubuntu as root; otherwise says what to install). With WHIR_REQUIRE_GPU=1 a missing
# adapter fails the GPU tests instead of skipping them.
set -euo pipefail
cd "$(dirname "$0")/.."

have_vulkan_driver() {
  ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json ${VK_DRIVER_FILES:+"$VK_DRIVER_FILES"} >/dev/null 2>&1
}

if [ "$(uname -s)" = "Linux" ] && ! have_vulkan_driver; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "No Vulkan driver found: installing mesa-vulkan-drivers (software adapter llvmpipe)."
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq mesa-vulkan-drivers >/dev/null
  else
    echo "No Vulkan driver found. Install one, e.g. 'sudo apt-get install mesa-vulkan-drivers'" \
         "(Debian/Ubuntu) or 'sudo dnf install mesa-vulkan-drivers' (Fedora); GPU tests will skip" \
         "unless WHIR_REQUIRE_GPU=1." >&2
  fi
fi

# Mesa's WSI looks for a runtime directory even headless.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
exec cargo test --workspace "$@"
