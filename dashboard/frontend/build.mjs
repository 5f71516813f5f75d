// Bundle the dashboard's scripts and copy library CSS into dashboard/static/dashboard/dist/.
// Run by platform/lib.sh (npm ci && npm run build); nothing is fetched from a CDN at run time.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "static", "dashboard", "dist");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const modules = ["overview", "broker", "queue", "workflows", "transactions", "channels", "tabs", "moves", "move_job", "ingests", "analytics",
  "workflow_instance", "definitions", "topics", "connections"];
await build({
  entryPoints: modules.map((name) => join(here, "src", `${name}.js`)),
  outdir: out, bundle: true, format: "esm", splitting: true, minify: true,
  target: ["es2020"], chunkNames: "chunks/[name]-[hash]", logLevel: "warning",
});
await build({  // classic scripts: the theme, run in <head> before the first paint; STOMP (window.BatonStomp)
  entryPoints: [join(here, "src", "theme.js"), join(here, "src", "stomp.js")], outdir: out, bundle: true,
  format: "iife", minify: true,
  target: ["es2020"], logLevel: "warning",
});
copyFileSync(join(here, "node_modules", "uplot", "dist", "uPlot.min.css"), join(out, "uPlot.min.css"));
console.log(`dashboard assets built into ${out}`);
