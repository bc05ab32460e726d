// Checks that the pieces of the deployment agree with each other and with lawnd itself:
//   - probes: native gRPC probes on the container port "health" (the plaintext health listener); readiness on
//     service "", liveness and startup on "liveness"; the startup budget covers a long recovery (>= 5 minutes);
//   - Services: select the pods, and each port lands on a container port of the same number; the headless one
//     governs the StatefulSet;
//   - lawn.yaml (the rendered ConfigMap's): listen / metrics_listen / health_listen ports are the container
//     ports, data_dir is the data volume's mount path, every key (nested sections flattened: tls.cert_file) is
//     a lawnd key (config/REFERENCE.md), shards is set and within the CPU limit,
//     terminationGracePeriodSeconds > shutdown_timeout; TLS and auth are on;
//   - the TLS and tokens files lawn.yaml names are keys of the operator's Secrets (lib.js OPERATOR_SECRETS),
//     mounted read-only as directories (no subPath: it would never see a rotation);
//   - the NetworkPolicy selects the pods and names only container ports: grpc from client-labelled pods only,
//     metrics from the monitoring namespace only, health open for the kubelet's probes;
//   - the container's command and args use only flags of `lawnd --help`, and --config names the mounted file;
//   - security context and resources; the Dockerfile's USER is the pod's runAsUser and its VOLUME is data_dir;
//   - the real lawnd accepts the rendered lawn.yaml: it runs on it (loopback, port 0, durability memory) with
//     throw-away certificates and a tokens file laid out as the Secrets would be mounted, answers health "",
//     "liveness" and "lawn.v1.TimerService" with SERVING on the health listener (plaintext) and, when lawnctl
//     speaks TLS, on the gRPC port over TLS (and refuses a call without a token there), serves the metric
//     families the dashboard uses, and drains to exit 0 on SIGTERM.
//
//   usage: node check_consistency.js KUBECTL REPO_DIR LAWND LAWNCTL
'use strict';

const childProcess = require('node:child_process');
const path = require('node:path');

const {
  Checker, OPERATOR_SECRETS, SECRET_FILE_KEYS, configKeys, findOne, helpFlags, isKnownKey, parseCpu,
  parseDurationSeconds, parseYaml, readText, referenceKeys, renderKustomize, repoPath, selects,
} = require('./lib.js');
const {runLawnd} = require('./lawnd_run.js');

// ---- Static checks of the rendered objects ------------------------------------------------------------------

function portNumber(port) {
  const m = /:([0-9]+)$/.exec(String(port));
  return m ? Number(m[1]) : NaN;
}

// The value at a dotted key, or undefined.
function getIn(config, dotted) {
  return dotted.split('.').reduce((v, k) => (v !== null && typeof v === 'object' ? v[k] : undefined), config);
}

// The pod label the NetworkPolicy admits to the gRPC port (deploy/README.md tells clients to set it).
const CLIENT_LABEL = {key: 'lawn.dev/client', value: 'true'};
const MONITORING_NAMESPACE = 'monitoring';


function checkContainer(check, sts, container, ports) {
  const spec = sts.spec.template.spec;
  const healthPort = ports.get('health');
  const probes = {
    startupProbe: 'liveness',
    livenessProbe: 'liveness',
    readinessProbe: '',
  };
  for (const [probeName, service] of Object.entries(probes)) {
    const probe = container[probeName];
    if (!check.expect(probe && probe.grpc, `container ${container.name}: ${probeName} is not a gRPC probe`)) continue;
    // The kubelet's gRPC probe speaks no TLS: only the plaintext health listener can answer it.
    check.expect(probe.grpc.port === healthPort,
                 `${probeName}.grpc.port ${probe.grpc.port} is not the container's health port ${healthPort}`);
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
  for (const key of configKeys(config)) {
    check.expect(isKnownKey(key, knownKeys), `lawn.yaml key '${key}' is not a lawnd key (config/REFERENCE.md)`);
  }
  const value = (key) => (config[key] !== undefined ? config[key] : defaults[key]);
  check.expect(portNumber(value('listen')) === ports.get('grpc'),
               `listen ${value('listen')} is not on the container's grpc port ${ports.get('grpc')}`);
  check.expect(/^(0\.0\.0\.0|\[::\]):/.test(value('listen')), `listen ${value('listen')} is not on every interface`);
  check.expect(portNumber(value('metrics_listen')) === ports.get('metrics'),
               `metrics_listen ${value('metrics_listen')} is not on the container's metrics port ${ports.get('metrics')}`);
  check.expect(portNumber(value('health_listen')) === ports.get('health'),
               `health_listen ${value('health_listen')} is not on the container's health port ${ports.get('health')}`);
  check.expect(/^(0\.0\.0\.0|\[::\]):/.test(value('health_listen')),
               `health_listen ${value('health_listen')} is not on every interface (the kubelet probes the pod IP)`);
  check.expect(getIn(config, 'tls.cert_file') && getIn(config, 'tls.key_file'),
               'TLS is off in lawn.yaml (tls.cert_file, tls.key_file)');
  check.expect(getIn(config, 'auth.tokens_file'), 'auth is off in lawn.yaml (auth.tokens_file)');
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

// The files of SECRET_FILE_KEYS that lawn.yaml names: each is a key of one of the operator's Secrets, on a
// Secret volume mounted read-only as a directory. Every Secret mount of the container is read-only, with no
// subPath (a subPath mount is a copy that never sees the Secret's updates: no rotation without a restart).
function checkSecretFiles(check, sts, container, config) {
  const spec = sts.spec.template.spec;
  const mounts = container.volumeMounts || [];
  const volumes = new Map((spec.volumes || []).map((v) => [v.name, v]));
  for (const key of SECRET_FILE_KEYS) {
    const file = getIn(config, key);
    if (file === undefined || file === null || file === '') continue;
    const under = (m) => String(file) === m.mountPath || String(file).startsWith(`${m.mountPath.replace(/\/$/, '')}/`);
    const mount = mounts.filter(under).sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    if (!check.expect(mount, `${key} ${file} is not under a volume mount`)) continue;
    const volume = volumes.get(mount.name);
    if (!check.expect(volume && volume.secret, `${key} ${file} is on volume '${mount.name}', which is no Secret`)) {
      continue;
    }
    const secretName = volume.secret.secretName;
    const secret = OPERATOR_SECRETS[secretName];
    if (!check.expect(secret, `volume '${mount.name}' mounts Secret '${secretName}', which deploy/README.md ` +
                              `does not make (${Object.keys(OPERATOR_SECRETS).join(', ')})`)) {
      continue;
    }
    // (A subPath mount is refused below; the key is still checked.)
    const relative = path.posix.join(mount.subPath || '', path.posix.relative(mount.mountPath, String(file)));
    const items = volume.secret.items;
    const secretKey = items ? (items.find((i) => i.path === relative) || {}).key : relative;
    check.expect(secretKey && secret.keys.includes(secretKey),
                 `${key} ${file}: '${relative}' is no key of Secret ${secretName} (${secret.keys.join(', ')})`);
    check.expect(volume.secret.optional !== true, `Secret volume '${mount.name}' is optional: lawnd needs ${file}`);
  }
  const fsGroup = (spec.securityContext || {}).fsGroup;
  for (const mount of mounts) {
    const volume = volumes.get(mount.name);
    if (!volume || !volume.secret) continue;
    check.expect(mount.readOnly === true, `Secret volume '${mount.name}' is not mounted readOnly`);
    check.expect(mount.subPath === undefined && mount.subPathExpr === undefined,
                 `Secret volume '${mount.name}' is mounted with subPath: it would never see a rotated Secret`);
    const mode = volume.secret.defaultMode ?? 0o644;
    check.expect((mode & 0o007) === 0, `Secret volume '${mount.name}': defaultMode 0${mode.toString(8)} lets ` +
                                       'every user read the keys');
    // The files belong to root, group fsGroup: lawnd (non-root) reads them through the group.
    check.expect(fsGroup !== undefined && (mode & 0o040) !== 0,
                 `Secret volume '${mount.name}': defaultMode 0${mode.toString(8)} with fsGroup ${fsGroup}: ` +
                 'lawnd (non-root) cannot read the files');
  }
}

// The NetworkPolicy that selects the pods: only container ports, each rule with ports (a rule without opens
// them all); grpc only from client-labelled pods, metrics only from the monitoring namespace, health from
// anywhere (the kubelet's probes come from the node), and no container port left unreachable.
function checkNetworkPolicy(check, objects, sts, ports) {
  const podLabels = sts.spec.template.metadata.labels;
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
  const selecting = policies.filter((np) => selects((np.spec.podSelector || {}).matchLabels, podLabels));
  if (!check.expect(selecting.length === 1,
                    `want one NetworkPolicy selecting the StatefulSet's pods, found ${selecting.length}`)) {
    return;
  }
  const np = selecting[0];
  const name = `NetworkPolicy/${np.metadata.name}`;
  check.expect((np.spec.policyTypes || []).includes('Ingress'), `${name}: policyTypes has no Ingress`);
  const byNumber = new Map([...ports].map(([portName, number]) => [number, portName]));
  const rulesOf = new Map([...ports.keys()].map((portName) => [portName, []]));
  for (const [i, rule] of (np.spec.ingress || []).entries()) {
    if (!check.expect((rule.ports || []).length > 0, `${name}: ingress rule ${i} has no ports: it opens every port`)) {
      continue;
    }
    for (const p of rule.ports) {
      const portName = typeof p.port === 'string' ? (ports.has(p.port) ? p.port : undefined) : byNumber.get(p.port);
      if (!check.expect(portName !== undefined, `${name}: ingress rule ${i} port ${p.port} is no container port`)) {
        continue;
      }
      check.expect(p.endPort === undefined, `${name}: ingress rule ${i} port ${p.port} has an endPort (a range)`);
      check.expect((p.protocol || 'TCP') === 'TCP', `${name}: ingress rule ${i} port ${p.port} is not TCP`);
      rulesOf.get(portName).push(rule);
    }
  }
  const peersOk = (portName, predicate, want) => {
    for (const rule of rulesOf.get(portName) || []) {
      const from = rule.from || [];
      check.expect(from.length > 0 && from.every(predicate),
                   `${name}: port ${portName} is open to ${from.length ? JSON.stringify(from) : 'every source'}, ` +
                   `want ${want} only`);
    }
  };
  const label = (selector, key) => ((selector || {}).matchLabels || {})[key];
  peersOk('grpc', (peer) => !peer.ipBlock && label(peer.podSelector, CLIENT_LABEL.key) === CLIENT_LABEL.value,
          `pods labelled ${CLIENT_LABEL.key}: "${CLIENT_LABEL.value}"`);
  peersOk('metrics',
          (peer) => !peer.ipBlock && label(peer.namespaceSelector, 'kubernetes.io/metadata.name') === MONITORING_NAMESPACE,
          `the namespace ${MONITORING_NAMESPACE}`);
  check.expect((rulesOf.get('health') || []).some((r) => (r.from || []).length === 0),
               `${name}: the health port is not open to every source: kubelet probes could be refused`);
  for (const [portName, rules] of rulesOf) {
    check.expect(rules.length > 0, `${name}: no ingress rule admits container port ${portName}: it is unreachable`);
  }
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
  check.expect(ports.has('grpc') && ports.has('metrics') && ports.has('health'),
               'the lawnd container needs ports named grpc, metrics and health');

  const knownKeys = referenceKeys(readText(repoPath(repo, 'config', 'REFERENCE.md')));
  const defaults = parseYaml(readText(repoPath(repo, 'config', 'lawn.yaml')), 'config/lawn.yaml');
  for (const key of configKeys(defaults)) {
    check.expect(isKnownKey(key, knownKeys), `config/lawn.yaml key '${key}' is missing from config/REFERENCE.md`);
  }
  // Nested sections flatten to dotted keys; a list is one key.
  check.expect(JSON.stringify(configKeys({a: 1, tls: {cert_file: 'x', key_file: 'y'}, rate_limits: [{burst: 1}]})) ===
               '["a","tls.cert_file","tls.key_file","rate_limits"]', 'configKeys does not flatten as documented');

  checkContainer(check, sts, container, ports);
  checkServices(check, objects, sts, ports);
  checkNetworkPolicy(check, objects, sts, ports);
  check.expect(readText(repoPath(repo, 'deploy', 'README.md')).includes(`${CLIENT_LABEL.key}: "${CLIENT_LABEL.value}"`),
               `deploy/README.md does not tell clients to carry the label ${CLIENT_LABEL.key}: "${CLIENT_LABEL.value}"`);
  const wired = checkConfigWiring(check, objects, sts, container, helpFlags(lawnd));
  if (wired) {
    checkConfig(check, wired.config, sts, container, ports, knownKeys, defaults);
    checkSecretFiles(check, sts, container, wired.config);
    checkDockerfileAgreement(check, readText(repoPath(repo, 'Dockerfile')), sts, wired.config, defaults);
    const shutdown = parseDurationSeconds(wired.config.shutdown_timeout ?? defaults.shutdown_timeout);
    await runLawnd(check, {kubectl, repo, lawnd, lawnctl, sts, container, configText: wired.configText,
                           shutdownSeconds: shutdown});
  }
  check.done();
}

main().catch((e) => {
  console.error(`deploy consistency: ${e.stack || e}`);
  process.exit(1);
});
