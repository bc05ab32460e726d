#!/usr/bin/env bash
# Installs the node packages of the deploy checks (package-lock.json, exactly) into DEST/node_modules.
# Idempotent: does nothing when DEST already holds an install of the same lock file. Needs the npm registry
# the first time, and node 20 + npm on PATH.
#   usage: npm_install.sh SRC_DIR DEST_DIR
set -euo pipefail
src=$1
dest=$2
stamp=$dest/node_modules/.lawn-package-lock.json
if [ -f "$stamp" ] && cmp -s "$src/package-lock.json" "$stamp"; then
  echo "deploy checks: node packages in $dest are up to date"
  exit 0
fi
command -v npm > /dev/null || { echo "deploy checks: npm not found (install node 20 and npm)" >&2; exit 1; }
mkdir -p "$dest"
cp "$src/package.json" "$src/package-lock.json" "$dest/"
if ! npm ci --prefix "$dest" --no-audit --no-fund --ignore-scripts --loglevel=error; then
  echo "deploy checks: 'npm ci' failed in $dest: the npm registry must be reachable to install" \
       "kubernetes-models, dockerfile-utils and yaml (package-lock.json in $src)" >&2
  exit 1
fi
cp "$src/package-lock.json" "$stamp"
echo "deploy checks: installed node packages into $dest"
