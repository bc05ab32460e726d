// Checks that the pieces of the deployment agree with each other and with lawnd itself:
//   - probes: native gRPC probes on the container's gRPC port; readiness on service "", liveness and startup on
//     "liveness"; the startup budget covers a long recovery (>= 5 minutes);
//   - Services: select the pods, and each port lands on a container port of the same number; the headless one
//     governs the StatefulSet;
//   - lawn.yaml (the rendered ConfigMap's): listen / metrics_listen ports are the container ports, data_dir is
//     the data volume's mount path, every key is a lawnd key (config/REFERENCE.md), shards is set and within
//     the CPU limit, terminationGracePeriodSeconds > shutdown_timeout;
//   - the container's command and args use only flags of `lawnd --help`, and --config names the mounted file;
//   - security context and resources; the Dockerfile's USER is the pod's runAsUser and its VOLUME is data_dir;
//   - the real lawnd accepts the rendered lawn.yaml: it runs on it (loopback, port 0, durability memory),
//     answers health "" and "liveness" with SERVING, serves the metric families the dashboard uses, and drains
//     to exit 0 on SIGTERM.
//
//   usage: node check_consistency.js KUBECTL REPO_DIR LAWND LAWNCTL
'use strict';

const childProcess = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const {
  Checker, findOne, parseCpu, parseDurationSeconds, parseYaml, readText, renderKustomize, repoPath, selects,
} = require('./lib.js');
const {ALWAYS_EXPORTED_METRICS} = require('./metrics.js');

// ---- Static checks of the rendered objects ------------------------------------------------------------------

function portNumber(port) {
  const m = /:([0-9]+)$/.exec(String(port));
  return m ? Number(m[1]) : NaN;
}

// The keys of lawnd's config: the first column of the table under "### Configuration keys" in REFERENCE.md.
function referenceKeys(referenceMd) {
  const section = referenceMd.split(/^### /m).find((s) => s.startsWith('Configuration keys'));
  if (!section) throw new Error('config/REFERENCE.md has no "### Configuration keys" section');
  const keys = [...section.matchAll(/^\| `([a-z0-9_.]+)` \|/gm)].map((m) => m[1]);
  if (keys.length === 0) throw new Error('config/REFERENCE.md: no keys found in the configuration table');
  return new Set(keys);
}

// The long flags in `lawnd --help`.
function helpFlags(lawnd) {
  const help = childProcess.spawnSync(lawnd, ['--help'], {encoding: 'utf8', timeout: 10000});
  if (help.status !== 0) throw new Error(`${lawnd} --help exited ${help.status}: ${help.stderr}`);
  return new Set([...help.stdout.matchAll(/^\s+(--[a-z][a-z0-9-]*)/gm)].map((m) => m[1]));
}

function checkContainer(check, sts, container, ports) {
  const spec = sts.spec.template.spec;
  const grpcPort = ports.get('grpc');
  const probes = {
    startupProbe: 'liveness',
    livenessProbe: 'liveness',
    readinessProbe: '',
  };
  for (const [probeName, service] of Object.entries(probes)) {
    const probe = container[probeName];
    if (!check.expect(probe && probe.grpc, `container ${container.name}: ${probeName} is not a gRPC probe`)) continue;
    check.expect(probe.grpc.port === grpcPort,
                 `${probeName}.grpc.port ${probe.grpc.port} is not the container's grpc port ${grpcPort}`);
    check.expect((probe.grpc.service || '') === service,
                 `${probeName}.grpc.service is '${probe.grpc.service}', want '${service}'`);
  }
  const startup = container.startupProbe;
  if (startup) {
    const budget = (startup.periodSeconds || 10) * (startup.failureThreshold || 3);
    check.expect(budget >= 300, `startupProbe allows ${budget}s, want >= 300s for a long recovery`);
  }

  const pod = spec.securityContext || {};
  const sc = container.securityContext || {};
  check.expect(pod.runAsNonRoot === true || sc.runAsNonRoot === true, 'runAsNonRoot is not set');
  check.expect((sc.runAsUser ?? pod.runAsUser) === 10001, 'runAsUser is not 10001');
  check.expect(sc.readOnlyRootFilesystem === true, 'readOnlyRootFilesystem is not true');
  check.expect(sc.allowPrivilegeEscalation === false, 'allowPrivilegeEscalation is not false');
  check.expect(JSON.stringify((sc.capabilities || {}).drop) === '["ALL"]', 'capabilities do not drop ALL');
  check.expect(((sc.seccompProfile || pod.seccompProfile) || {}).type === 'RuntimeDefault',
               'seccompProfile is not RuntimeDefault');
  check.expect(pod.fsGroup === (sc.runAsGroup ?? pod.runAsGroup),
               'fsGroup differs from runAsGroup: the data volume would not be writable');

  const res = container.resources || {};
  for (const kind of ['requests', 'limits']) {
    for (const r of ['cpu', 'memory']) {
      check.expect(res[kind] && res[kind][r] !== undefined, `resources.${kind}.${r} is not set`);
    }
  }
}

function checkServices(check, objects, sts, ports) {
  const podLabels = sts.spec.template.metadata.labels;
  const services = objects.filter((o) => o.kind === 'Service');
  check.expect(services.length >= 2, `want a headless and a client Service, found ${services.length}`);
  const byNumber = new Map([...ports].map(([name, number]) => [number, name]));
  for (const svc of services) {
    const name = `Service/${svc.metadata.name}`;
    check.expect(selects(svc.spec.selector, podLabels), `${name} does not select the StatefulSet's pods`);
    for (const p of svc.spec.ports || []) {
      const target = p.targetPort === undefined ? p.port : p.targetPort;
      const containerPort = typeof target === 'string' ? ports.get(target) : (byNumber.has(target) ? target : undefined);
      check.expect(containerPort !== undefined, `${name} port ${p.name}: targetPort ${target} is no container port`);
      check.expect(containerPort === p.port,
                   `${name} port ${p.name}: port ${p.port} differs from container port ${containerPort}`);
      check.expect(p.name === byNumber.get(containerPort),
                   `${name} port ${p.port} is named '${p.name}', the container port '${byNumber.get(containerPort)}'`);
    }
  }
  const headless = services.find((s) => s.spec.clusterIP === 'None');
  if (check.expect(headless, 'no headless Service (clusterIP: None)')) {
    check.expect(sts.spec.serviceName === headless.metadata.name,
                 `StatefulSet serviceName '${sts.spec.serviceName}' is not the headless Service ` +
                 `'${headless.metadata.name}'`);
  }
  check.expect(services.some((s) => s.spec.clusterIP !== 'None' && (s.spec.type || 'ClusterIP') === 'ClusterIP'),
               'no ClusterIP Service for clients');
  const pdb = findOne(objects, 'PodDisruptionBudget');
  check.expect(selects(pdb.spec.selector.matchLabels, podLabels), 'the PodDisruptionBudget does not select the pods');
}

// Returns {config, configText} of the lawn.yaml that the container's --config names.
function checkConfigWiring(check, objects, sts, container, lawndFlags) {
  const argv = [...(container.command || []), ...(container.args || [])];
  check.expect(argv[0] === '/usr/local/bin/lawnd', `the container command is '${argv[0]}', want /usr/local/bin/lawnd`);
  let configPath = null;
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) continue;  // The value of the flag before.
    const [flag, inline] = arg.split(/=(.*)/s);
    check.expect(lawndFlags.has(flag), `container args use ${flag}, which lawnd --help does not list`);
    const value = inline !== undefined ? inline : argv[i + 1];
    if (flag === '--config') configPath = value;
  }
  if (!check.expect(configPath, 'the container args have no --config')) return null;

  const spec = sts.spec.template.spec;
  const mount = (container.volumeMounts || []).find((m) => configPath.startsWith(`${m.mountPath}/`));
  if (!check.expect(mount, `--config ${configPath} is not under a volume mount`)) return null;
  const volume = (spec.volumes || []).find((v) => v.name === mount.name);
  if (!check.expect(volume && volume.configMap, `--config ${configPath}: volume '${mount.name}' is not a ConfigMap`)) {
    return null;
  }
  const key = path.posix.relative(mount.mountPath, configPath);
  const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === volume.configMap.name);
  if (!check.expect(cm, `ConfigMap ${volume.configMap.name} (volume '${mount.name}') is not in the render`)) return null;
  if (!check.expect(cm.data && typeof cm.data[key] === 'string', `ConfigMap ${cm.metadata.name} has no key ${key}`)) {
    return null;
  }
  return {configText: cm.data[key], config: parseYaml(cm.data[key], `ConfigMap ${cm.metadata.name} ${key}`)};
}

function checkConfig(check, config, sts, container, ports, knownKeys, defaults) {
  for (const key of Object.keys(config)) {
    check.expect(knownKeys.has(key), `lawn.yaml key '${key}' is not a lawnd key (config/REFERENCE.md)`);
  }
  const value = (key) => (config[key] !== undefined ? config[key] : defaults[key]);
  check.expect(portNumber(value('listen')) === ports.get('grpc'),
               `listen ${value('listen')} is not on the container's grpc port ${ports.get('grpc')}`);
  check.expect(/^(0\.0\.0\.0|\[::\]):/.test(value('listen')), `listen ${value('listen')} is not on every interface`);
  check.expect(portNumber(value('metrics_listen')) === ports.get('metrics'),
               `metrics_listen ${value('metrics_listen')} is not on the container's metrics port ${ports.get('metrics')}`);
  const annotations = sts.spec.template.metadata.annotations || {};
  check.expect(annotations['prometheus.io/scrape'] === 'true', 'no prometheus.io/scrape: "true" annotation');
  check.expect(Number(annotations['prometheus.io/port']) === ports.get('metrics'),
               `prometheus.io/port ${annotations['prometheus.io/port']} is not the metrics port`);

  const claims = (sts.spec.volumeClaimTemplates || []).map((c) => c.metadata.name);
  const dataMounts = (container.volumeMounts || []).filter((m) => claims.includes(m.name));
  if (check.expect(dataMounts.length === 1, `want one volumeClaimTemplate mount, found ${dataMounts.length}`)) {
    check.expect(path.posix.normalize(String(value('data_dir'))) === path.posix.normalize(dataMounts[0].mountPath),
                 `data_dir ${value('data_dir')} is not the data volume's mount path ${dataMounts[0].mountPath}`);
  }
  check.expect(value('durability') !== 'memory', 'durability memory in Kubernetes would lose every timer on restart');

  const shards = Number(value('shards'));
  const cpuLimit = parseCpu(container.resources.limits.cpu);
  check.expect(shards >= 1, 'shards is 0 (one per core of the node, not of the container): set it');
  check.expect(shards <= Math.max(1, Math.ceil(cpuLimit)), `shards ${shards} is above the CPU limit ${cpuLimit}`);

  const grace = sts.spec.template.spec.terminationGracePeriodSeconds ?? 30;
  const shutdown = parseDurationSeconds(value('shutdown_timeout'));
  check.expect(grace > shutdown,
               `terminationGracePeriodSeconds ${grace} is not above shutdown_timeout ${value('shutdown_timeout')}`);
}

// The final stage of the Dockerfile: USER and VOLUME agree with the pod.
function checkDockerfileAgreement(check, dockerfile, sts, config, defaults) {
  const stages = dockerfile.split(/^FROM\s/m);
  const last = stages[stages.length - 1];
  const user = (/^USER\s+(\S+)/m.exec(last) || [])[1];
  const runAsUser = sts.spec.template.spec.securityContext.runAsUser;
  check.expect(user && Number(user.split(':')[0]) === runAsUser,
               `Dockerfile USER ${user} differs from the pod's runAsUser ${runAsUser}`);
  const volume = (/^VOLUME\s+(.+)$/m.exec(last) || [])[1] || '';
  const dataDir = config.data_dir !== undefined ? config.data_dir : defaults.data_dir;
  check.expect(volume.includes(`"${dataDir}"`) || volume.split(/\s+/).includes(dataDir),
               `Dockerfile VOLUME ${volume} does not hold data_dir ${dataDir}`);
}

// ---- The real lawnd on the rendered config -----------------------------------------------------------------

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

function health(lawnctl, port, service) {
  const args = ['--addr', `127.0.0.1:${port}`, '--timeout', '2s', 'health'];
  if (service !== '') args.push('--service', service);
  const r = childProcess.spawnSync(lawnctl, args, {encoding: 'utf8', timeout: 10000});
  return (r.stdout || '').trim();
}

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function runLawnd(check, lawnd, lawnctl, configText, shutdownSeconds) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lawn-deploy-check-'));
  const configFile = path.join(dir, 'lawn.yaml');
  fs.writeFileSync(configFile, configText);
  // The rendered file as is, with only what cannot hold on this machine overridden: loopback, port 0, no disk.
  const args = ['--config', configFile, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0',
                '--data-dir', path.join(dir, 'data'), '--durability', 'memory'];
  const child = childProcess.spawn(lawnd, args, {stdio: ['ignore', 'ignore', 'pipe']});
  let log = '';
  let exit = null;
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve((exit = {code, signal}))));
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (c) => (log += c));
  try {
    // Wait (bounded) for the line that names the port, or for the exit a config error causes.
    let grpcPort = null;
    for (let waited = 0; waited < 30000 && exit === null && grpcPort === null; waited += 50) {
      const m = /lawnd listening on 127\.0\.0\.1:([0-9]+)/.exec(log);
      if (m) grpcPort = Number(m[1]);
      else await delay(50);
    }
    if (exit !== null) {
      check.fail(`lawnd exited ${exit.code} on the rendered lawn.yaml ` +
                 `(${exit.code === 2 ? 'config error' : 'start failure'}):\n${log}`);
      return;
    }
    if (!check.expect(grpcPort !== null, `lawnd did not log its listening port within 30 s:\n${log}`)) return;
    let status = '';
    for (let waited = 0; waited < 30000 && status !== 'SERVING' && exit === null; waited += 100) {
      status = health(lawnctl, grpcPort, '');
      if (status !== 'SERVING') await delay(100);
    }
    check.expect(status === 'SERVING', `lawnd health (readiness service "") is '${status}', want SERVING`);
    check.expect(health(lawnctl, grpcPort, 'liveness') === 'SERVING',
                 'lawnd health service "liveness" (the liveness probe) is not SERVING');

    const metricsMatch = /metrics on http:\/\/127\.0\.0\.1:([0-9]+)\/metrics/.exec(log);
    if (check.expect(metricsMatch, `lawnd did not log its /metrics address:\n${log}`)) {
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
    if (exit === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), (shutdownSeconds + 5) * 1000);
      await exited;
      clearTimeout(timer);
      check.expect(exit.code === 0, `lawnd exited ${exit.code} (signal ${exit.signal}) after SIGTERM, want 0:\n${log}`);
    }
    fs.rmSync(dir, {recursive: true, force: true});
  }
}

async function main() {
  const [kubectl, repo, lawnd, lawnctl] = process.argv.slice(2);
  if (!kubectl || !repo || !lawnd || !lawnctl) {
    console.error('usage: node check_consistency.js KUBECTL REPO_DIR LAWND LAWNCTL');
    process.exit(2);
  }
  const check = new Checker('deploy consistency');
  const objects = renderKustomize(kubectl, repoPath(repo, 'deploy'));
  const sts = findOne(objects, 'StatefulSet');
  const containers = sts.spec.template.spec.containers;
  const container = containers.find((c) => c.name === 'lawnd');
  if (!container) throw new Error('the StatefulSet has no container named lawnd');
  const ports = new Map((container.ports || []).map((p) => [p.name, p.containerPort]));
  check.expect(ports.has('grpc') && ports.has('metrics'), 'the lawnd container needs ports named grpc and metrics');

  const knownKeys = referenceKeys(readText(repoPath(repo, 'config', 'REFERENCE.md')));
  const defaults = parseYaml(readText(repoPath(repo, 'config', 'lawn.yaml')), 'config/lawn.yaml');
  // Sections (tls:, auth:) hold dotted keys: tls.cert_file.
  const flatKeys = Object.entries(defaults).flatMap(([key, value]) =>
    value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value).map((k) => `${key}.${k}`) : [key]);
  for (const key of flatKeys) {
    check.expect(knownKeys.has(key), `config/lawn.yaml key '${key}' is missing from config/REFERENCE.md`);
  }

  checkContainer(check, sts, container, ports);
  checkServices(check, objects, sts, ports);
  const wired = checkConfigWiring(check, objects, sts, container, helpFlags(lawnd));
  if (wired) {
    checkConfig(check, wired.config, sts, container, ports, knownKeys, defaults);
    checkDockerfileAgreement(check, readText(repoPath(repo, 'Dockerfile')), sts, wired.config, defaults);
    const shutdown = parseDurationSeconds(wired.config.shutdown_timeout ?? defaults.shutdown_timeout);
    await runLawnd(check, lawnd, lawnctl, wired.configText, shutdown);
  }
  check.done();
}

main().catch((e) => {
  console.error(`deploy consistency: ${e.stack || e}`);
  process.exit(1);
});
