// Shared helpers of the deploy checks: a tiny assertion collector, the kustomize render, YAML loading,
// duration and quantity parsing, and lookups in the rendered objects.
//
// Node packages come from NODE_PATH (set by CTest to the build tree's node_modules, see CMakeLists.txt).
'use strict';

const childProcess = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

function requirePackage(name) {
  try {
    return require(name);
  } catch (e) {
    console.error(`cannot load the npm package '${name}' (${e.code || e.message}); the CTest fixture ` +
                  `deploy.npm_install installs it (tests/deploy/npm_install.sh), or set NODE_PATH`);
    process.exit(1);
  }
}

// Collects failed expectations so one run reports all of them; `done()` exits non-zero if any failed.
class Checker {
  constructor(name) {
    this.name = name;
    this.failures = [];
    this.passed = 0;
  }
  expect(ok, message) {
    if (ok) {
      this.passed++;
    } else {
      this.failures.push(message);
      console.error(`FAIL ${message}`);
    }
    return ok;
  }
  fail(message) {
    return this.expect(false, message);
  }
  done() {
    if (this.failures.length > 0) {
      console.error(`${this.name}: ${this.failures.length} failed, ${this.passed} passed`);
      process.exit(1);
    }
    console.log(`${this.name}: all ${this.passed} checks passed`);
  }
}

// The objects of `kubectl kustomize DIR`, as plain JS values.
function renderKustomize(kubectl, dir) {
  const result = childProcess.spawnSync(kubectl, ['kustomize', dir], {encoding: 'utf8'});
  if (result.error) {
    const hint = result.error.code === 'ENOENT' ? ' (install kubectl v1.14+, which bundles kustomize)' : '';
    throw new Error(`cannot run ${kubectl}: ${result.error.message}${hint}`);
  }
  if (result.status !== 0) throw new Error(`kubectl kustomize ${dir} failed:\n${result.stderr}`);
  const YAML = requirePackage('yaml');
  const docs = YAML.parseAllDocuments(result.stdout);
  for (const doc of docs) {
    if (doc.errors.length > 0) throw new Error(`kubectl kustomize produced bad YAML: ${doc.errors[0].message}`);
  }
  return docs.map((d) => d.toJS()).filter((o) => o !== null);
}

function parseYaml(text, what) {
  const YAML = requirePackage('yaml');
  const doc = YAML.parseDocument(text, {uniqueKeys: true});
  if (doc.errors.length > 0) throw new Error(`${what}: ${doc.errors[0].message}`);
  return doc.toJS();
}

// lawnd's duration syntax (config/REFERENCE.md): a number with a unit ns, us, ms, s, m, h. Seconds.
function parseDurationSeconds(text) {
  const m = /^([0-9]+(?:\.[0-9]+)?)(ns|us|ms|s|m|h)$/.exec(String(text).trim());
  if (!m) throw new Error(`not a lawnd duration: '${text}'`);
  const unit = {ns: 1e-9, us: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600}[m[2]];
  return Number(m[1]) * unit;
}

// A Kubernetes CPU quantity ("2", "500m", 1.5) in cores.
function parseCpu(quantity) {
  const text = String(quantity);
  if (/^[0-9]+m$/.test(text)) return Number(text.slice(0, -1)) / 1000;
  if (/^[0-9]+(\.[0-9]+)?$/.test(text)) return Number(text);
  throw new Error(`not a CPU quantity: '${text}'`);
}

function findOne(objects, kind, predicate = () => true) {
  const found = objects.filter((o) => o.kind === kind && predicate(o));
  if (found.length !== 1) throw new Error(`expected exactly one ${kind}, found ${found.length}`);
  return found[0];
}

// True if every key=value of `selector` (a Service selector or matchLabels) is in `labels`.
function selects(selector, labels) {
  const entries = Object.entries(selector || {});
  return entries.length > 0 && entries.every(([k, v]) => labels && labels[k] === v);
}

// The Secrets the operator creates (deploy/README.md, "TLS and tokens"): name -> Secret type and the keys the
// README's `kubectl create secret` commands put in it. The StatefulSet mounts them; lawn.yaml names their files.
const OPERATOR_SECRETS = {
  'lawn-tls': {type: 'kubernetes.io/tls', keys: ['tls.crt', 'tls.key', 'ca.crt']},
  'lawn-tokens': {type: 'Opaque', keys: ['tokens.yaml']},
  'lawn-member-token': {type: 'Opaque', keys: ['token']},  // deploy/cluster only.
};

// The config keys (dotted: section.key) that name a file lawnd reads from one of those Secrets.
const SECRET_FILE_KEYS = ['tls.cert_file', 'tls.key_file', 'tls.client_ca_file', 'auth.tokens_file', 'cluster.token_file'];

// The Secret `name` of OPERATOR_SECRETS as deploy/README.md's command makes it (kubectl create secret generic
// ... --dry-run=client: no cluster needed), from `files` (key -> local file).
function makeOperatorSecret(kubectl, name, files) {
  const spec = OPERATOR_SECRETS[name];
  const args = ['create', 'secret', 'generic', name, '--dry-run=client', '-o', 'json'];
  if (spec.type !== 'Opaque') args.push(`--type=${spec.type}`);
  for (const key of spec.keys) args.push(`--from-file=${key}=${files[key]}`);
  const result = childProcess.spawnSync(kubectl, args, {encoding: 'utf8'});
  if (result.error || result.status !== 0) {
    throw new Error(`kubectl ${args.join(' ')} failed: ${result.error ? result.error.message : result.stderr}`);
  }
  return JSON.parse(result.stdout);
}

function readText(file) {
  return fs.readFileSync(file, 'utf8');
}

function repoPath(repo, ...parts) {
  return path.join(repo, ...parts);
}

// The keys of lawnd's config: the first column of the table under "### Configuration keys" in REFERENCE.md.
// A key of a nested section is dotted (`tls.cert_file`).
function referenceKeys(referenceMd) {
  const section = referenceMd.split(/^### /m).find((s) => s.startsWith('Configuration keys'));
  if (!section) throw new Error('config/REFERENCE.md has no "### Configuration keys" section');
  const keys = [...section.matchAll(/^\| `([a-z0-9_]+(?:\.[a-z0-9_]+)*)` \|/gm)].map((m) => m[1]);
  if (keys.length === 0) throw new Error('config/REFERENCE.md: no keys found in the configuration table');
  return new Set(keys);
}

// The keys of a parsed config file, nested sections flattened to dotted keys ({tls: {cert_file}} ->
// tls.cert_file). A list (rate_limits) or an empty section is one key.
function configKeys(config, prefix = '') {
  const keys = [];
  for (const [key, value] of Object.entries(config || {})) {
    const dotted = prefix + key;
    const isSection = value !== null && typeof value === 'object' && !Array.isArray(value);
    if (isSection && Object.keys(value).length > 0) keys.push(...configKeys(value, `${dotted}.`));
    else keys.push(dotted);
  }
  return keys;
}

// A key of REFERENCE.md, or a section of some (an empty `tls:`).
function isKnownKey(key, knownKeys) {
  return knownKeys.has(key) || [...knownKeys].some((k) => k.startsWith(`${key}.`));
}

// The long flags in `lawnd --help`.
function helpFlags(lawnd) {
  const help = childProcess.spawnSync(lawnd, ['--help'], {encoding: 'utf8', timeout: 10000});
  if (help.status !== 0) throw new Error(`${lawnd} --help exited ${help.status}: ${help.stderr}`);
  return new Set([...help.stdout.matchAll(/^\s+(--[a-z][a-z0-9-]*)/gm)].map((m) => m[1]));
}

module.exports = {
  Checker, OPERATOR_SECRETS, SECRET_FILE_KEYS, configKeys, findOne, helpFlags, isKnownKey, makeOperatorSecret, parseCpu,
  parseDurationSeconds, parseYaml, readText, referenceKeys, renderKustomize, repoPath, requirePackage, selects,
};
