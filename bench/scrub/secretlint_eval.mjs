// Runs secretlint (@secretlint/core + @secretlint/secretlint-rule-preset-recommend, pinned in
// tools/npm/scrub) over the same corpus as scrub_eval, in-process (no CLI start-up in the timing).
// Usage: node secretlint_eval.mjs CORPUS_DIR OUT_FINDINGS_JSON [--throughput-mb N] [--workloads DIR]
// Writes {"files": {"labelled/x": [[start,end,ruleId],...]}, "throughput": {...}}; with
// --workloads, throughput.workloads is the run over every tool result of DIR/*.jsonl (as
// scrub_eval --workloads), with its findings.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const npmDir = path.resolve(here, "../../tools/npm/scrub");
const require = createRequire(path.join(npmDir, "package.json"));
const { lintSource } = await import(require.resolve("@secretlint/core"));
const { loadPackagesFromConfigDescriptor } = await import(require.resolve("@secretlint/config-loader"));

const [corpus, outFile, ...rest] = process.argv.slice(2);
const mbFlag = rest.indexOf("--throughput-mb");
const throughputMb = mbFlag >= 0 ? Number(rest[mbFlag + 1]) : 2;
const wlFlag = rest.indexOf("--workloads");
const workloadsDir = wlFlag >= 0 ? rest[wlFlag + 1] : null;

const loaded = await loadPackagesFromConfigDescriptor({
  configDescriptor: { rules: [{ id: "@secretlint/secretlint-rule-preset-recommend" }] },
  node_modulesDir: path.join(npmDir, "node_modules"),
});
if (!loaded.ok) {
  console.error("secretlint config failed:", JSON.stringify(loaded.errors));
  process.exit(2);
}
const config = loaded.config;

async function lint(filePath, content) {
  const result = await lintSource({
    source: { content, filePath, ext: path.extname(filePath), contentType: "text" },
    options: { config, maskSecrets: false, noPhysicFilePath: true },
  });
  return result.messages.map((m) => [m.range[0], m.range[1], m.ruleId]);
}

const labels = JSON.parse(fs.readFileSync(path.join(corpus, "labels.json"), "utf8"));
const files = {};
for (const f of labels.files) {
  const content = fs.readFileSync(path.join(corpus, f.path), "utf8");
  files[f.path] = await lint(f.path, content);
}

async function throughput(sub) {
  const dir = path.join(corpus, sub);
  const names = fs.readdirSync(dir).sort();
  let bytes = 0;
  // Warm-up on the first file (JIT, rule set-up), then time.
  await lint(names[0], fs.readFileSync(path.join(dir, names[0]), "utf8"));
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  for (const n of names) {
    if (bytes >= throughputMb * 1e6) break;
    const content = fs.readFileSync(path.join(dir, n), "utf8");
    await lint(n, content);
    bytes += content.length;
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const c = process.cpuUsage(c0);
  // CPU time of the whole process (user+system; includes V8 helper threads such as GC).
  const cpu = (c.user + c.system) / 1e6;
  return { bytes, wall_seconds: secs, cpu_seconds: cpu, mb_per_s: bytes / 1e6 / cpu, wall_mb_per_s: bytes / 1e6 / secs };
}

const tp = {
  clean: await throughput("clean"),
  dense: await throughput("dense"),
  "very-dense": await throughput("very-dense"),
};
// Every tool result of the recorded runs: findings (all are false positives: the runs hold no
// secret), then one timed pass after one warm-up pass.
async function workloads(dir) {
  const texts = [];
  for (const name of fs.readdirSync(dir).filter((n) => n.endsWith(".jsonl")).sort()) {
    for (const line of fs.readFileSync(path.join(dir, name), "utf8").split("\n")) {
      if (!line.trim()) continue;
      let run;
      try {
        run = JSON.parse(line);
      } catch {
        continue;
      }
      for (const step of run.steps ?? []) {
        if (step.role === "tool" && typeof step.content === "string") texts.push(step.content);
      }
    }
  }
  const findings = [];
  for (let i = 0; i < texts.length; i++) {
    for (const [s, e, rule] of await lint(`tool-${i}.txt`, texts[i])) {
      findings.push([rule, texts[i].slice(s, Math.min(e, s + 40))]);
    }
  }
  let bytes = 0;
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  for (let i = 0; i < texts.length; i++) {
    await lint(`tool-${i}.txt`, texts[i]);
    bytes += Buffer.byteLength(texts[i]);
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const c = process.cpuUsage(c0);
  const cpu = (c.user + c.system) / 1e6;
  return {
    bytes, rounds: 1, tool_results: texts.length, findings, wall_seconds: secs, cpu_seconds: cpu,
    mb_per_s: bytes / 1e6 / cpu, wall_mb_per_s: bytes / 1e6 / secs,
  };
}
if (workloadsDir) {
  tp.workloads = await workloads(workloadsDir);
  console.error(`secretlint: workloads ${tp.workloads.mb_per_s.toFixed(2)} MB/s, ` +
                `${tp.workloads.findings.length} findings`);
}

fs.writeFileSync(outFile, JSON.stringify({ tool: "secretlint 13.0.6 + preset-recommend 13.0.6", files, throughput: tp }));
console.error(`secretlint: clean ${tp.clean.mb_per_s.toFixed(2)} MB/s, dense ${tp.dense.mb_per_s.toFixed(2)} MB/s`);
