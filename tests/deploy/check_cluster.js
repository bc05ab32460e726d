// Checks that the cluster-mode overlay (deploy/cluster) agrees with itself, with the base and with lawnd:
//   - lawn's StatefulSet: replicas == cluster.expect_members; each member is named after its pod
//     (--cluster-member $(POD_NAME), POD_NAME from metadata.name) and advertises its pod's DNS name under the
//     StatefulSet's headless Service on the container's grpc port; its flags are flags of `lawnd --help`;
//   - the rendered lawn.yaml has a cluster section whose keys are lawnd keys (config/REFERENCE.md), whose
//     etcd_endpoints name a Service of this render selecting the etcd pods on that port, and whose
//     tls_ca_file and token_file are keys of operator Secrets in directories where the StatefulSet mounts
//     them; TLS stays on, and with auth on the members have a token;
//   - the members may reach each other: their pods carry the label the base NetworkPolicy admits to grpc;
//   - etcd: a StatefulSet whose --initial-cluster names exactly its replicas, each under its headless
//     Service's DNS name on the peer port; a PodDisruptionBudget keeping its quorum; a NetworkPolicy admitting
//     the lawn pods to the client port and etcd's own pods to the peer port.
//
//   usage: node check_cluster.js KUBECTL REPO_DIR LAWND
'use strict';

const {
  Checker, OPERATOR_SECRETS, configKeys, findOne, helpFlags, isKnownKey, parseYaml, readText, referenceKeys,
  renderKustomize, repoPath, selects,
} = require('./lib.js');

function argAfter(args, flag) {
  const i = args.indexOf(flag);
  if (i >= 0 && i + 1 < args.length) return args[i + 1];
  const eq = args.find((a) => a.startsWith(`${flag}=`));
  return eq === undefined ? undefined : eq.slice(flag.length + 1);
}

function envFieldRef(container, name) {
  const env = (container.env || []).find((e) => e.name === name);
  return env && env.valueFrom && env.valueFrom.fieldRef ? env.valueFrom.fieldRef.fieldPath : undefined;
}

function checkLawn(check, objects, lawnd, knownKeys) {
  const sts = findOne(objects, 'StatefulSet', (o) => o.metadata.name === 'lawn');
  const container = sts.spec.template.spec.containers.find((c) => c.name === 'lawnd');
  const args = container.args || [];
  const flags = helpFlags(lawnd);
  for (const arg of args.filter((a) => a.startsWith('--'))) {
    check.expect(flags.has(arg.split('=')[0]), `lawnd argument ${arg} is not a flag of lawnd --help`);
  }
  check.expect(argAfter(args, '--cluster-member') === '$(POD_NAME)', '--cluster-member is not $(POD_NAME)');
  check.expect(envFieldRef(container, 'POD_NAME') === 'metadata.name', 'POD_NAME does not come from metadata.name');
  check.expect(envFieldRef(container, 'POD_NAMESPACE') === 'metadata.namespace',
               'POD_NAMESPACE does not come from metadata.namespace');
  const grpcPort = (container.ports || []).find((p) => p.name === 'grpc').containerPort;
  const headless = objects.find((o) => o.kind === 'Service' && o.metadata.name === sts.spec.serviceName);
  check.expect(headless && headless.spec.clusterIP === 'None', `serviceName ${sts.spec.serviceName} is not a headless Service`);
  check.expect(argAfter(args, '--cluster-advertise') === `$(POD_NAME).${sts.spec.serviceName}.$(POD_NAMESPACE).svc:${grpcPort}`,
               `--cluster-advertise ${argAfter(args, '--cluster-advertise')} is not the pod's DNS name on the grpc port`);
  check.expect((sts.spec.template.metadata.labels || {})['lawn.dev/client'] === 'true',
               'the members do not carry lawn.dev/client: "true", so the base NetworkPolicy keeps them apart');

  // The rendered config: the ConfigMap mounted where --config points.
  const configPath = argAfter(args, '--config');
  const mount = container.volumeMounts.find((m) => configPath && configPath.startsWith(`${m.mountPath}/`));
  const volume = mount && sts.spec.template.spec.volumes.find((v) => v.name === mount.name);
  const cm = volume && objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === volume.configMap.name);
  if (!check.expect(cm, `--config ${configPath} is not in a mounted ConfigMap`)) return null;
  const config = parseYaml(cm.data[configPath.slice(mount.mountPath.length + 1)], 'the rendered lawn.yaml');
  for (const key of configKeys(config)) {
    check.expect(isKnownKey(key, knownKeys), `lawn.yaml key '${key}' is not a lawnd key (config/REFERENCE.md)`);
  }
  const cluster = config.cluster || {};
  check.expect(Array.isArray(cluster.etcd_endpoints) && cluster.etcd_endpoints.length > 0,
               'lawn.yaml has no cluster.etcd_endpoints');
  check.expect(cluster.expect_members === sts.spec.replicas,
               `cluster.expect_members ${cluster.expect_members} is not the StatefulSet's replicas ${sts.spec.replicas}`);
  check.expect(config.tls && config.tls.cert_file, 'TLS is off in cluster mode');
  // tls_ca_file (the TLS Secret's CA) and token_file (the members' token, needed with auth on): each a key of
  // an operator Secret, in the directory where the StatefulSet mounts it.
  for (const key of ['tls_ca_file', 'token_file']) {
    const file = cluster[key] || '';
    // The deepest mount holding the file (the Secrets are mounted inside the config's directory).
    const mount = container.volumeMounts.filter((m) => file.startsWith(`${m.mountPath}/`))
                      .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    const volume = mount && sts.spec.template.spec.volumes.find((v) => v.name === mount.name);
    const secret = volume && volume.secret && volume.secret.secretName;
    check.expect(secret && OPERATOR_SECRETS[secret] && OPERATOR_SECRETS[secret].keys.includes(file.slice(mount.mountPath.length + 1)),
                 `cluster.${key} ${file} is not a key of a mounted operator Secret`);
  }
  check.expect(!(config.auth && config.auth.tokens_file) || cluster.token_file,
               'auth is on but cluster.token_file is not set: hand-overs between members would be refused');
  return cluster;
}

function checkEtcd(check, objects, cluster) {
  const sts = findOne(objects, 'StatefulSet', (o) => o.metadata.name !== 'lawn');
  const podLabels = sts.spec.template.metadata.labels;
  const container = sts.spec.template.spec.containers[0];
  const args = container.args || [];
  const peerPort = container.ports.find((p) => p.name === 'peer').containerPort;
  const clientPort = container.ports.find((p) => p.name === 'client').containerPort;
  const expected = [];
  for (let i = 0; i < sts.spec.replicas; i++) {
    const name = `${sts.metadata.name}-${i}`;
    expected.push(`${name}=http://${name}.${sts.spec.serviceName}.$(POD_NAMESPACE).svc:${peerPort}`);
  }
  check.expect(argAfter(args, '--initial-cluster') === expected.join(','),
               `etcd --initial-cluster does not name its ${sts.spec.replicas} pods: ${argAfter(args, '--initial-cluster')}`);
  check.expect(sts.spec.replicas % 2 === 1 && sts.spec.replicas >= 3, 'etcd needs an odd number of members, 3 or more');
  const headless = objects.find((o) => o.kind === 'Service' && o.metadata.name === sts.spec.serviceName);
  check.expect(headless && headless.spec.clusterIP === 'None' && selects(headless.spec.selector, podLabels),
               `etcd serviceName ${sts.spec.serviceName} is not a headless Service of its pods`);
  for (const endpoint of (cluster && cluster.etcd_endpoints) || []) {
    const [host, port] = endpoint.split(':');
    const svc = objects.find((o) => o.kind === 'Service' && o.metadata.name === host);
    check.expect(svc && selects(svc.spec.selector, podLabels) &&
                 svc.spec.ports.some((p) => String(p.port) === port && (p.targetPort === 'client' || p.targetPort === clientPort)),
                 `cluster.etcd_endpoints ${endpoint} is not a Service of the etcd pods on their client port`);
  }
  const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget' && selects(o.spec.selector.matchLabels, podLabels));
  check.expect(pdb && pdb.spec.maxUnavailable === 1, 'no PodDisruptionBudget keeps etcd\'s quorum (maxUnavailable 1)');
  const policy = objects.find((o) => o.kind === 'NetworkPolicy' && selects(o.spec.podSelector.matchLabels, podLabels));
  if (!check.expect(policy, 'no NetworkPolicy selects the etcd pods')) return;
  const lawnPods = findOne(objects, 'StatefulSet', (o) => o.metadata.name === 'lawn').spec.template.metadata.labels;
  const admits = (from, port) => policy.spec.ingress.some((rule) =>
    (rule.from || []).some((f) => f.podSelector && selects(f.podSelector.matchLabels, from)) &&
    (rule.ports || []).some((p) => p.port === port));
  check.expect(admits(lawnPods, 'client'), 'the etcd NetworkPolicy does not admit the lawn pods to the client port');
  check.expect(admits(podLabels, 'peer'), 'the etcd NetworkPolicy does not admit the etcd pods to the peer port');
}

function main() {
  const [kubectl, repo, lawnd] = process.argv.slice(2);
  if (!kubectl || !repo || !lawnd) {
    console.error('usage: node check_cluster.js KUBECTL REPO_DIR LAWND');
    process.exit(2);
  }
  const check = new Checker('deploy cluster overlay');
  const objects = renderKustomize(kubectl, repoPath(repo, 'deploy', 'cluster'));
  const knownKeys = referenceKeys(readText(repoPath(repo, 'config', 'REFERENCE.md')));
  const cluster = checkLawn(check, objects, lawnd, knownKeys);
  checkEtcd(check, objects, cluster);
  check.done();
}

main();
