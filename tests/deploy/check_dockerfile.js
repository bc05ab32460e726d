// Lints the Dockerfile offline with the npm package dockerfile-utils (its validator: any error fails, warnings
// are printed) and checks its shape with dockerfile-ast: a debian:bookworm build stage that runs
// .ci/install-deps, a debian:bookworm-slim runtime stage that copies from it, a non-root USER, a VOLUME, EXPOSE
// of the gRPC and metrics ports, STOPSIGNAL SIGTERM and an exec-form ENTRYPOINT of /usr/local/bin/lawnd. Also
// that .dockerignore keeps .git and build trees out of the context.
//
//   usage: node check_dockerfile.js REPO_DIR
'use strict';

const fs = require('node:fs');

const {Checker, readText, repoPath, requirePackage} = require('./lib.js');

const SEVERITY = {1: 'error', 2: 'warning', 3: 'info', 4: 'hint'};

function main() {
  const [repo] = process.argv.slice(2);
  if (!repo) {
    console.error('usage: node check_dockerfile.js REPO_DIR');
    process.exit(2);
  }
  const {validate} = requirePackage('dockerfile-utils');
  const {DockerfileParser} = requirePackage('dockerfile-ast');
  const check = new Checker('dockerfile');
  const text = readText(repoPath(repo, 'Dockerfile'));

  for (const d of validate(text)) {
    const line = d.range.start.line + 1;
    const message = `Dockerfile:${line}: ${SEVERITY[d.severity] || d.severity}: ${d.message} (code ${d.code})`;
    if (d.severity === 1) check.fail(message);
    else console.log(message);
  }

  const dockerfile = DockerfileParser.parse(text);
  const froms = dockerfile.getFROMs();
  check.expect(froms.length >= 2, `want a build stage and a runtime stage, found ${froms.length} FROM`);
  if (froms.length >= 2) {
    const first = froms[0];
    const last = froms[froms.length - 1];
    check.expect(first.getImageName() === 'debian' && first.getImageTag() === 'bookworm',
                 `the build stage is FROM ${first.getImage()}, want debian:bookworm`);
    check.expect(last.getImageName() === 'debian' && last.getImageTag() === 'bookworm-slim',
                 `the runtime stage is FROM ${last.getImage()}, want debian:bookworm-slim`);
  }

  // Instructions by stage: the runtime stage is everything after the last FROM.
  const instructions = dockerfile.getInstructions();
  const lastFromLine = froms.length > 0 ? froms[froms.length - 1].getRange().start.line : 0;
  const runtime = instructions.filter((i) => i.getRange().start.line > lastFromLine);
  const build = instructions.filter((i) => i.getRange().start.line < lastFromLine);
  const of = (list, keyword) => list.filter((i) => i.getKeyword() === keyword);

  check.expect(of(build, 'RUN').some((i) => /\.ci\/install-deps/.test(i.getArgumentsContent())),
               'the build stage does not run .ci/install-deps');
  check.expect(of(build, 'RUN').some((i) => /LAWN_BUILD_TESTS=OFF/.test(i.getArgumentsContent()) &&
                                             /LAWN_BUILD_BENCH=OFF/.test(i.getArgumentsContent())),
               'the build stage does not configure with tests and benchmarks off');
  const buildStage = froms.length > 0 ? froms[0].getBuildStage() : null;
  check.expect(buildStage !== null && of(runtime, 'COPY').some((i) => {
    const from = i.getFromFlag();
    return from !== null && from.getValue() === buildStage;
  }), `the runtime stage copies nothing from the build stage '${buildStage}' (COPY --from=...)`);
  const runtimeRuns = of(runtime, 'RUN').map((i) => i.getArgumentsContent()).join('\n');
  check.expect(!/install-deps|build-essential|-dev\b|cmake/.test(runtimeRuns),
               'the runtime stage installs build tools');
  check.expect(/--no-install-recommends/.test(runtimeRuns), 'runtime apt-get install without --no-install-recommends');
  check.expect(/rm -rf \/var\/lib\/apt\/lists/.test(runtimeRuns), 'the runtime stage keeps the apt lists');

  const users = of(runtime, 'USER');
  if (check.expect(users.length > 0, 'the runtime stage has no USER')) {
    const user = users[users.length - 1].getArgumentsContent().split(':')[0];
    check.expect(user !== 'root' && user !== '0', `the runtime stage runs as ${user}`);
  }
  check.expect(of(runtime, 'VOLUME').length > 0, 'the runtime stage has no VOLUME');
  const exposed = of(runtime, 'EXPOSE').flatMap((i) => i.getArgumentsContent().split(/\s+/));
  for (const port of ['7070', '9464']) {
    check.expect(exposed.some((p) => p.split('/')[0] === port), `port ${port} is not EXPOSEd`);
  }
  const stop = of(runtime, 'STOPSIGNAL');
  check.expect(stop.length > 0 && stop[stop.length - 1].getArgumentsContent() === 'SIGTERM',
               'STOPSIGNAL is not SIGTERM');
  const entrypoints = of(runtime, 'ENTRYPOINT');
  if (check.expect(entrypoints.length === 1, `want one ENTRYPOINT, found ${entrypoints.length}`)) {
    let argv = null;
    try {
      argv = JSON.parse(entrypoints[0].getArgumentsContent());
    } catch (e) {
      argv = null;
    }
    if (check.expect(Array.isArray(argv) && argv.every((a) => typeof a === 'string'),
                     'ENTRYPOINT is not in exec form (a JSON array of strings)')) {
      check.expect(argv[0] === '/usr/local/bin/lawnd', `ENTRYPOINT runs ${argv[0]}, want /usr/local/bin/lawnd`);
      check.expect(argv.includes('--config'), 'ENTRYPOINT passes no --config');
    }
  }
  check.expect(of(runtime, 'CMD').length === 0, 'a CMD would append arguments to lawnd');

  const ignoreFile = repoPath(repo, '.dockerignore');
  if (check.expect(fs.existsSync(ignoreFile), 'no .dockerignore')) {
    const ignored = readText(ignoreFile).split('\n').map((l) => l.trim());
    for (const entry of ['.git', 'build', 'build-*']) {
      check.expect(ignored.includes(entry), `.dockerignore does not exclude ${entry}`);
    }
  }
  check.done();
}

main();
