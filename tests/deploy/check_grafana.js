// Checks deploy/grafana/lawn.json: valid JSON with the shape Grafana imports (schemaVersion, a Prometheus
// datasource variable used by every panel, unique panel ids, panels inside the 24-column grid without
// overlaps), and PromQL that names only lawnd's metrics (tests/deploy/metrics.js): counters and histogram
// series only inside rate / irate / increase, gauges never; histogram_quantile over _bucket grouped by le.
// Every metric of the list appears in some panel.
//
//   usage: node check_grafana.js DASHBOARD_JSON
'use strict';

const {Checker, readText} = require('./lib.js');
const {METRICS, seriesNames} = require('./metrics.js');

const RATE_FUNCTIONS = new Set(['rate', 'irate', 'increase']);
const KEYWORDS = new Set([
  'and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool',
  'inf', 'nan',
]);

// Removes what cannot hold a metric name: Grafana variables, strings, label matchers, ranges, grouping lists.
function stripExpr(expr) {
  return expr
      .replace(/\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*/g, ' ')
      .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
      .replace(/\{[^}]*\}/g, ' ')
      .replace(/\[[^\]]*\]/g, ' ')
      .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
}

// Each metric name in `expr` with the function that directly encloses it ('' at top level or in bare parens).
function metricUses(expr) {
  const text = stripExpr(expr);
  const uses = [];
  const stack = [];
  const token = /([A-Za-z_:][A-Za-z0-9_:]*)|([0-9][0-9A-Za-z_.]*)|(\()|(\))|(\S)/g;
  let pendingFunction = null;
  let m;
  while ((m = token.exec(text)) !== null) {
    if (m[1] !== undefined) {
      const rest = text.slice(token.lastIndex);
      if (/^\s*\(/.test(rest)) {
        pendingFunction = m[1];
      } else if (!KEYWORDS.has(m[1])) {
        uses.push({name: m[1], within: stack.length > 0 ? stack[stack.length - 1] : ''});
      }
    } else if (m[3] !== undefined) {
      stack.push(pendingFunction || '');
      pendingFunction = null;
    } else if (m[4] !== undefined) {
      if (stack.length === 0) throw new Error(`unbalanced ')' in: ${expr}`);
      stack.pop();
    }
  }
  if (stack.length !== 0) throw new Error(`unbalanced '(' in: ${expr}`);
  return uses;
}

function checkExpr(check, where, expr, series, used) {
  let uses;
  try {
    uses = metricUses(expr);
  } catch (e) {
    check.fail(`${where}: ${e.message}`);
    return;
  }
  check.expect(uses.length > 0, `${where}: no metric in '${expr}'`);
  for (const {name, within} of uses) {
    const metric = series.get(name);
    if (!check.expect(metric !== undefined, `${where}: '${name}' is not a lawnd metric (tests/deploy/metrics.js)`)) {
      continue;
    }
    used.add(metric);
    const cumulative = METRICS[metric].type === 'counter' || METRICS[metric].type === 'histogram';
    if (cumulative) {
      check.expect(RATE_FUNCTIONS.has(within), `${where}: ${name} is cumulative; wrap it in rate(): '${expr}'`);
    } else {
      check.expect(!RATE_FUNCTIONS.has(within), `${where}: ${name} is a gauge; rate() of it is meaningless`);
    }
    if (METRICS[metric].type === 'histogram' && /histogram_quantile/.test(expr)) {
      check.expect(name.endsWith('_bucket'), `${where}: histogram_quantile needs ${metric}_bucket, not ${name}`);
      check.expect(/\b(by|without)\s*\([^)]*\ble\b/.test(expr) || !/\bby\s*\(/.test(expr),
                   `${where}: histogram_quantile must keep the le label: '${expr}'`);
    }
  }
}

function overlaps(a, b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

function main() {
  const [file] = process.argv.slice(2);
  if (!file) {
    console.error('usage: node check_grafana.js DASHBOARD_JSON');
    process.exit(2);
  }
  const check = new Checker('grafana dashboard');
  let dashboard;
  try {
    dashboard = JSON.parse(readText(file));
  } catch (e) {
    check.fail(`${file} is not valid JSON: ${e.message}`);
    check.done();
  }
  check.expect(typeof dashboard.title === 'string' && dashboard.title !== '', 'the dashboard has no title');
  check.expect(typeof dashboard.uid === 'string' && /^[A-Za-z0-9_-]{1,40}$/.test(dashboard.uid),
               `uid '${dashboard.uid}' is not a Grafana uid (1-40 of A-Z a-z 0-9 _ -)`);
  check.expect(Number.isInteger(dashboard.schemaVersion) && dashboard.schemaVersion >= 36 &&
               dashboard.schemaVersion <= 41, `schemaVersion ${dashboard.schemaVersion} is not in 36..41`);

  const variables = (dashboard.templating && dashboard.templating.list) || [];
  const dsVar = variables.find((v) => v.type === 'datasource');
  if (check.expect(dsVar, 'no datasource variable in templating')) {
    check.expect(dsVar.query === 'prometheus', `datasource variable queries '${dsVar.query}', want prometheus`);
  }
  const dsRef = dsVar ? `\${${dsVar.name}}` : null;
  const series = seriesNames();
  const used = new Set();
  for (const v of variables.filter((v) => v.type === 'query')) {
    check.expect(v.datasource && v.datasource.uid === dsRef, `variable ${v.name} does not use ${dsRef}`);
    const query = typeof v.query === 'string' ? v.query : (v.query && v.query.query) || '';
    const m = /^label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)/.exec(query);
    if (m) check.expect(series.has(m[1]), `variable ${v.name}: '${m[1]}' is not a lawnd metric`);
  }

  // Panels, with those inside collapsed rows.
  const panels = [];
  for (const p of dashboard.panels || []) {
    panels.push(p);
    for (const inner of p.panels || []) panels.push(inner);
  }
  check.expect(panels.length > 0, 'the dashboard has no panels');
  const ids = new Set();
  const placed = [];
  for (const p of panels) {
    const where = `panel ${p.id} '${p.title}'`;
    check.expect(Number.isInteger(p.id) && !ids.has(p.id), `${where}: id missing or repeated`);
    ids.add(p.id);
    check.expect(typeof p.title === 'string' && p.title !== '', `${where}: no title`);
    const g = p.gridPos || {};
    if (check.expect([g.x, g.y, g.w, g.h].every(Number.isInteger) && g.x >= 0 && g.w > 0 && g.x + g.w <= 24,
                     `${where}: gridPos ${JSON.stringify(g)} is outside the 24-column grid`)) {
      for (const other of placed) {
        check.expect(!overlaps(g, other.g), `${where} overlaps ${other.where}`);
      }
      placed.push({g, where});
    }
    if (p.type === 'row') continue;
    check.expect(p.datasource && p.datasource.uid === dsRef, `${where}: datasource is not ${dsRef}`);
    const targets = p.targets || [];
    check.expect(targets.length > 0, `${where}: no queries`);
    const refIds = new Set();
    for (const t of targets) {
      check.expect(t.refId && !refIds.has(t.refId), `${where}: refId missing or repeated`);
      refIds.add(t.refId);
      check.expect(!t.datasource || t.datasource.uid === dsRef, `${where} ${t.refId}: datasource is not ${dsRef}`);
      if (check.expect(typeof t.expr === 'string' && t.expr.trim() !== '', `${where} ${t.refId}: no expr`)) {
        checkExpr(check, `${where} ${t.refId}`, t.expr, series, used);
      }
    }
  }
  for (const metric of Object.keys(METRICS)) {
    check.expect(used.has(metric), `no panel shows ${metric}`);
  }
  check.done();
}

main();
