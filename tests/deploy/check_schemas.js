// Renders deploy/ with `kubectl kustomize` and validates every object offline against the Kubernetes OpenAPI
// schemas shipped by the npm package kubernetes-models (v4). On top of the schema (which, like the API's
// OpenAPI, allows unknown fields), reports every field the schema does not know, as `kubectl apply`'s strict
// field validation would: the validator is run on a Proxy that records which properties it reads; a property of
// a plain object that it never read is not in the schema (maps such as labels are enumerated, not read by name).
// The render must hold no Secret (the operator makes them); the Secrets that deploy/README.md's kubectl
// commands make are validated the same way, built from placeholder files.
//
//   usage: node check_schemas.js KUBECTL DEPLOY_DIR
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const {Checker, OPERATOR_SECRETS, makeOperatorSecret, renderKustomize, requirePackage} = require('./lib.js');

// Wraps `root` so that every property read and every key enumeration is recorded, per object.
function trackAccesses(root) {
  const entries = [];
  const proxies = new WeakMap();
  const wrap = (value, where) => {
    if (value === null || typeof value !== 'object') return value;
    if (proxies.has(value)) return proxies.get(value);
    const entry = {value, where, read: new Set(), enumerated: false};
    entries.push(entry);
    const proxy = new Proxy(value, {
      get(target, key, receiver) {
        if (typeof key === 'string') entry.read.add(key);
        const v = Reflect.get(target, key, receiver);
        const own = typeof key === 'string' && Object.prototype.hasOwnProperty.call(target, key);
        return own ? wrap(v, `${where}/${key}`) : v;
      },
      has(target, key) {
        if (typeof key === 'string') entry.read.add(key);
        return Reflect.has(target, key);
      },
      ownKeys(target) {
        entry.enumerated = true;
        return Reflect.ownKeys(target);
      },
    });
    proxies.set(value, proxy);
    return proxy;
  };
  return {proxy: wrap(root, ''), entries};
}

function modelFor(apiVersion, kind) {
  // "apps/v1" -> kubernetes-models/apps/v1/Kind; "v1" -> kubernetes-models/v1/Kind.
  const modulePath = `kubernetes-models/${apiVersion}/${kind}`;
  try {
    return require(modulePath)[kind];
  } catch (e) {
    return null;
  }
}

// Validates one object against its schema, unknown fields included.
function validate(check, object) {
  const name = `${object.kind}/${object.metadata && object.metadata.name}`;
  const Model = modelFor(object.apiVersion, object.kind);
  if (!check.expect(Model && typeof Model.prototype.validate === 'function',
                    `${name}: no kubernetes-models schema for apiVersion ${object.apiVersion} kind ` +
                    `${object.kind}`)) {
    return;
  }
  const tracked = trackAccesses(object);
  try {
    Model.prototype.validate.call(tracked.proxy);
    check.expect(true, '');
  } catch (e) {
    check.fail(`${name}: schema validation failed: ${e.message}`);
    return;
  }
  for (const entry of tracked.entries) {
    if (Array.isArray(entry.value) || entry.enumerated) continue;
    for (const key of Object.keys(entry.value)) {
      check.expect(entry.read.has(key), `${name}: field ${entry.where}/${key} is not in the schema`);
    }
  }
  console.log(`ok ${object.apiVersion} ${name}`);
}

// The Secrets of deploy/README.md's commands, from placeholder files (the commands do not parse them).
function operatorSecrets(kubectl) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lawn-deploy-secrets-'));
  try {
    return Object.entries(OPERATOR_SECRETS).map(([name, spec]) => {
      const files = {};
      for (const key of spec.keys) {
        files[key] = path.join(dir, key);
        fs.writeFileSync(files[key], `placeholder ${key}\n`);
      }
      return makeOperatorSecret(kubectl, name, files);
    });
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
}

function main() {
  const [kubectl, deployDir] = process.argv.slice(2);
  if (!kubectl || !deployDir) {
    console.error('usage: node check_schemas.js KUBECTL DEPLOY_DIR');
    process.exit(2);
  }
  requirePackage('kubernetes-models');
  const check = new Checker('deploy schemas');
  const objects = renderKustomize(kubectl, deployDir);
  check.expect(objects.length > 0, 'kubectl kustomize rendered no object');
  for (const object of objects) validate(check, object);
  // The kinds the deployment is made of (a lost resource line in kustomization.yaml shows here).
  for (const kind of ['StatefulSet', 'Service', 'ConfigMap', 'PodDisruptionBudget', 'NetworkPolicy']) {
    check.expect(objects.some((o) => o.kind === kind), `the render has no ${kind}`);
  }
  // Certificates, keys and tokens are never committed: the operator creates the Secrets.
  for (const o of objects.filter((o) => o.kind === 'Secret')) {
    check.fail(`the render holds Secret/${o.metadata.name}: secrets must not be committed, the operator ` +
               `creates ${Object.keys(OPERATOR_SECRETS).join(' and ')} (deploy/README.md)`);
  }
  for (const secret of operatorSecrets(kubectl)) {
    validate(check, secret);
    const keys = Object.keys(secret.data || {}).sort();
    const want = [...OPERATOR_SECRETS[secret.metadata.name].keys].sort();
    check.expect(JSON.stringify(keys) === JSON.stringify(want),
                 `Secret/${secret.metadata.name} has keys ${keys}, want ${want}`);
  }
  check.done();
}

main();
