#!/usr/bin/env bash
# Debian's chromium for the replay viewer's browser test (tests/replay/test_viewer_browser.py).
# Installs it where it is missing and can be installed; otherwise says why, and that test is skipped.
set -u
command -v chromium >/dev/null 2>&1 && exit 0
skip() { echo "note: chromium is not installed and $1: the replay viewer's browser test will be skipped" >&2; exit 0; }
command -v apt-get >/dev/null 2>&1 || skip "there is no apt-get"
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else skip "this user cannot install packages"; fi
fi
export DEBIAN_FRONTEND=noninteractive
echo "installing Debian's chromium for the browser test..." >&2
$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 \
    || { $SUDO apt-get update -qq >/dev/null 2>&1 && $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; } \
    || skip "apt-get could not install it"
