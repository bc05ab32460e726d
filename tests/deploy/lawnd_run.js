// The real lawnd on the rendered lawn.yaml (part of check_consistency.js). Only what cannot hold on this machine
// is changed: the listeners move to 127.0.0.1 port 0 and durability to memory (flags), and the Secret files come
// from a scratch root laid out as the kubelet would mount the operator's Secrets: throw-away certificates
// (tests/testing/make_certs.sh) and a tokens file, put into Secrets by the same `kubectl create secret` commands
// as deploy/README.md's, written under <root><mountPath>/<key>, and lawn.yaml's file paths prefixed with <root>.
// A config key that names a file no Secret holds, or a mount that does not match, makes lawnd exit 1.
//
// Then: health "", "liveness" and "lawn.v1.TimerService" SERVING on the plaintext health listener (the
// kubelet's probes); when lawnctl has --tls-ca, the gRPC port answers health over TLS, not in plaintext, and
// refuses a call without a token but serves it with one; the dashboard's metric families; exit 0 at SIGTERM.
'use strict';

const childProcess = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const {SECRET_FILE_KEYS, makeOperatorSecret, requirePackage} = require('./lib.js');
const {ALWAYS_EXPORTED_METRICS} = require('./metrics.js');

function get(url, timeoutMs) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, {timeout: timeoutMs}, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({status: res.statusCode, body}));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}

// lawnctl [globalArgs] COMMAND... against 127.0.0.1:port; never with the caller's $LAWN_TOKEN.
function lawnctlRun(lawnctl, port, globalArgs, command, token) {
  const env = {...process.env};
  delete env.LAWN_TOKEN;
  if (token !== undefined) env.LAWN_TOKEN = token;
  const args = ['--addr', `127.0.0.1:${port}`, '--timeout', '2s', ...globalArgs, ...command];
  const r = childProcess.spawnSync(lawnctl, args, {encoding: 'utf8', timeout: 10000, env});
  return {status: r.status, stdout: (r.stdout || '').trim(), stderr: (r.stderr || '').trim()};
}

function health(lawnctl, port, service, globalArgs = []) {
  const command = service === '' ? ['health'] : ['health', '--service', service];
  return lawnctlRun(lawnctl, port, globalArgs, command).stdout;
}

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Writes every Secret volume of the container under root (root + mountPath + '/' + file), from the Secrets
// deploy/README.md's commands make out of `sources` (Secret name -> key -> local file).
function layOutSecrets(kubectl, sts, container, root, sources) {
  const volumes = new Map((sts.spec.template.spec.volumes || []).map((v) => [v.name, v]));
  for (const mount of container.volumeMounts || []) {
    const volume = volumes.get(mount.name);
    if (!volume || !volume.secret) continue;
    const name = volume.secret.secretName;
    if (!sources[name]) throw new Error(`volume '${mount.name}' mounts Secret ${name}, which the check cannot make`);
    const secret = makeOperatorSecret(kubectl, name, sources[name]);
    const files = volume.secret.items || Object.keys(secret.data).map((key) => ({key, path: key}));
    const dir = path.join(root, mount.mountPath);
    for (const item of files) {
      const file = path.join(dir, item.path);
      fs.mkdirSync(path.dirname(file), {recursive: true});
      fs.writeFileSync(file, Buffer.from(secret.data[item.key] || '', 'base64'), {mode: 0o600});
    }
  }
}

// The tokens file: one token with every permission in every namespace. Returns {file, token}.
function writeTokens(dir) {
  const token = crypto.randomBytes(32).toString('base64');
  const sha256 = crypto.createHash('sha256').update(token).digest('hex');
  const file = path.join(dir, 'tokens.yaml');
  fs.writeFileSync(file, ['tokens:', '  - name: deploy-check', `    sha256: ${sha256}`, '    grants:',
                          '      - namespaces: ["*"]',
                          '        permissions: [start, delete, read, subscribe, observe, admin]', ''].join('\n'));
  return {file, token};
}

// lawn.yaml with each SECRET_FILE_KEYS path moved under root. Returns {text, clientCa} (clientCa: mTLS is on).
function rewriteConfig(configText, root) {
  const YAML = requirePackage('yaml');
  const doc = YAML.parseDocument(configText);
  let clientCa = false;
  for (const key of SECRET_FILE_KEYS) {
    const keyPath = key.split('.');
    const file = doc.getIn(keyPath);
    if (typeof file !== 'string' || file === '') continue;
    doc.setIn(keyPath, path.join(root, file));
    if (key === 'tls.client_ca_file') clientCa = true;
  }
  return {text: String(doc), clientCa};
}

// Waits (bounded) until `find(log)` returns non-null or lawnd exits.
async function waitForLog(state, find, timeoutMs) {
  for (let waited = 0; waited < timeoutMs && state.exit === null; waited += 50) {
    const found = find(state.log);
    if (found !== null) return found;
    await delay(50);
  }
  return find(state.log);
}

// The checks on the gRPC port when lawnctl speaks TLS: health over TLS, none in plaintext, tokens required.
function checkGrpcPort(check, lawnctl, grpcPort, tlsArgs, token) {
  check.expect(health(lawnctl, grpcPort, '', tlsArgs) === 'SERVING',
               'health "" over TLS on the gRPC port (lawnctl --tls-ca ...) is not SERVING');
  check.expect(health(lawnctl, grpcPort, '') !== 'SERVING',
               'the gRPC port answers health in plaintext: TLS is not on');
  const denied = lawnctlRun(lawnctl, grpcPort, [...tlsArgs, '--token='], ['stats']);
  check.expect(denied.status !== 0 && /UNAUTHENTICATED/i.test(`${denied.stdout}\n${denied.stderr}`),
               `lawnctl stats without a token: exit ${denied.status}, want UNAUTHENTICATED: ${denied.stderr}`);
  const allowed = lawnctlRun(lawnctl, grpcPort, tlsArgs, ['stats'], token);
  check.expect(allowed.status === 0, `lawnctl stats with the token: exit ${allowed.status}: ${allowed.stderr}`);
}

// {kubectl, repo, lawnd, lawnctl, sts, container, configText, shutdownSeconds}
async function runLawnd(check, {kubectl, repo, lawnd, lawnctl, sts, container, configText, shutdownSeconds}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lawn-deploy-check-'));
  const certs = path.join(dir, 'certs');
  const root = path.join(dir, 'root');
  const made = childProcess.spawnSync('bash', [path.join(repo, 'tests', 'testing', 'make_certs.sh'), certs],
                                      {encoding: 'utf8'});
  if (made.status !== 0) throw new Error(`tests/testing/make_certs.sh failed: ${made.stderr}`);
  const tokens = writeTokens(dir);
  layOutSecrets(kubectl, sts, container, root, {
    'lawn-tls': {'tls.crt': path.join(certs, 'server.crt'), 'tls.key': path.join(certs, 'server.key'),
                 'ca.crt': path.join(certs, 'ca.crt')},
    'lawn-tokens': {'tokens.yaml': tokens.file},
  });
  const config = rewriteConfig(configText, root);
  const configFile = path.join(dir, 'lawn.yaml');
  fs.writeFileSync(configFile, config.text);

  const args = ['--config', configFile, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0',
                '--health-listen', '127.0.0.1:0', '--data-dir', path.join(dir, 'data'), '--durability', 'memory'];
  const child = childProcess.spawn(lawnd, args, {stdio: ['ignore', 'ignore', 'pipe']});
  const state = {log: '', exit: null};
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve((state.exit = {code, signal}))));
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (c) => (state.log += c));
  const portIn = (re) => (log) => {
    const m = re.exec(log);
    return m ? Number(m[1]) : null;
  };
  try {
    const grpcPort = await waitForLog(state, portIn(/lawnd listening on 127\.0\.0\.1:([0-9]+)/), 30000);
    const healthPort = await waitForLog(state, portIn(/health[^\n]*? on 127\.0\.0\.1:([0-9]+)/), 5000);
    if (state.exit !== null) {
      check.fail(`lawnd exited ${state.exit.code} on the rendered lawn.yaml ` +
                 `(${state.exit.code === 2 ? 'config error' : 'start failure'}):\n${state.log}`);
      return;
    }
    if (!check.expect(grpcPort !== null, `lawnd did not log its listening port within 30 s:\n${state.log}`)) return;
    if (!check.expect(healthPort !== null, `lawnd did not log its health listener's port:\n${state.log}`)) return;

    // The probes' view: the plaintext health listener.
    let status = '';
    for (let waited = 0; waited < 30000 && status !== 'SERVING' && state.exit === null; waited += 100) {
      status = health(lawnctl, healthPort, '');
      if (status !== 'SERVING') await delay(100);
    }
    check.expect(status === 'SERVING', `health listener: service "" (readiness) is '${status}', want SERVING`);
    for (const service of ['liveness', 'lawn.v1.TimerService']) {
      check.expect(health(lawnctl, healthPort, service) === 'SERVING',
                   `health listener: service "${service}" is not SERVING`);
    }

    const lawnctlHelp = childProcess.spawnSync(lawnctl, ['--help'], {encoding: 'utf8', timeout: 10000});
    if (/--tls-ca\b/.test(`${lawnctlHelp.stdout}${lawnctlHelp.stderr}`)) {
      const tlsArgs = ['--tls-ca', path.join(certs, 'ca.crt')];
      if (config.clientCa) {
        tlsArgs.push('--tls-cert', path.join(certs, 'client.crt'), '--tls-key', path.join(certs, 'client.key'));
      }
      checkGrpcPort(check, lawnctl, grpcPort, tlsArgs, tokens.token);
    } else {
      console.log('note: lawnctl has no --tls-ca: the gRPC port (TLS, tokens) is not checked, only the health listener');
    }

    const metricsMatch = /metrics on http:\/\/127\.0\.0\.1:([0-9]+)\/metrics/.exec(state.log);
    if (check.expect(metricsMatch, `lawnd did not log its /metrics address:\n${state.log}`)) {
      const res = await get(`http://127.0.0.1:${metricsMatch[1]}/metrics`, 5000);
      check.expect(res.status === 200, `GET /metrics answered ${res.status}`);
      const families = new Set([...res.body.matchAll(/^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) /gm)].map((m) => m[1]));
      for (const metric of ALWAYS_EXPORTED_METRICS) {
        // A counter's TYPE line may name the family without its _total suffix.
        const found = families.has(metric) || families.has(metric.replace(/_total$/, ''));
        check.expect(found, `lawnd's /metrics has no ${metric} (used by deploy/grafana/lawn.json)`);
      }
    }
  } finally {
    if (state.exit === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), (shutdownSeconds + 5) * 1000);
      await exited;
      clearTimeout(timer);
      check.expect(state.exit.code === 0,
                   `lawnd exited ${state.exit.code} (signal ${state.exit.signal}) after SIGTERM, want 0:\n${state.log}`);
    }
    fs.rmSync(dir, {recursive: true, force: true});
  }
}

module.exports = {runLawnd};
