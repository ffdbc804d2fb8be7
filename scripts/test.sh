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

# Dawn for Node (npm package `webgpu`) and SwiftShader (Chrome's software Vulkan driver, from
# Debian's chromium-common) under target/dawn, for tests/dawn.rs: Tint compiles every kernel.
# Anything missing is a warning here, a skip in the test, and a failure under WHIR_REQUIRE_GPU=1.
DAWN_DIR="$PWD/target/dawn"
DAWN_PACKAGE="webgpu@0.6.2"
install_dawn() {
  mkdir -p "$DAWN_DIR"
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
      echo "Installing Node (nodejs, npm) for the Dawn test."
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null || return 1
    else
      echo "No Node found: install nodejs and npm for the Dawn test." >&2
      return 1
    fi
  fi
  if [ ! -f "$DAWN_DIR/node_modules/webgpu/index.js" ]; then
    echo "Installing $DAWN_PACKAGE (Dawn for Node) under target/dawn."
    npm install --prefix "$DAWN_DIR" --no-save --no-audit --no-fund --loglevel=error "$DAWN_PACKAGE" >/dev/null || return 1
  fi
  if [ ! -f "$DAWN_DIR/swiftshader/libvk_swiftshader.so" ]; then
    command -v apt-get >/dev/null || { echo "No apt-get to fetch SwiftShader (Debian's chromium-common)." >&2; return 1; }
    echo "Fetching SwiftShader from Debian's chromium-common under target/dawn."
    local tmp
    tmp="$(mktemp -d)"
    (cd "$tmp" && { apt-get download chromium-common >/dev/null 2>&1 || { apt-get update -qq && apt-get download chromium-common >/dev/null 2>&1; }; }) || { rm -rf "$tmp"; return 1; }
    dpkg -x "$tmp"/chromium-common_*.deb "$tmp/x" && mkdir -p "$DAWN_DIR/swiftshader" \
      && cp "$tmp/x/usr/lib/chromium/libvk_swiftshader.so" "$DAWN_DIR/swiftshader/" || { rm -rf "$tmp"; return 1; }
    rm -rf "$tmp"
  fi
  # The driver's manifest, pointing at the library where it lies.
  printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s", "api_version": "1.0.5"}}\n' \
    "$DAWN_DIR/swiftshader/libvk_swiftshader.so" > "$DAWN_DIR/swiftshader/vk_swiftshader_icd.json"
}
if [ "$(uname -s)" = "Linux" ] && [ "$(uname -m)" = "x86_64" ]; then
  install_dawn || echo "Dawn for Node or SwiftShader could not be installed: the Dawn test will skip (fail under WHIR_REQUIRE_GPU=1)." >&2
fi
export WHIR_DAWN_DIR="$DAWN_DIR"

# Mesa's WSI looks for a runtime directory even headless.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
# With no arguments: every test target and doc test, but not the examples' binaries (~130 s of
# compiling on CI's 2 cores; `cargo build --examples` or scripts/pack-gpu.sh builds them, and the tests
# compile the examples' shared parts: stark/config.rs, zerocheck.rs). Arguments (e.g. `--test
# driver`) pass through to `cargo test --workspace`.
if [ "$#" -eq 0 ]; then
  cargo test --workspace --lib --bins --tests
  exec cargo test --workspace --doc
fi
exec cargo test --workspace "$@"
